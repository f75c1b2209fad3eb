"""A wasi:http client as componentize-py builds one: no sbx module, only the
standard interfaces. `app.wasm URL` sends GET URL through
wasi:http/outgoing-handler and prints the status and body, or the error
code the host answered with, and then exits with failure."""

from urllib.parse import urlsplit

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import environment, exit, outgoing_handler, streams
from wit_world.imports import wasi_http_types as http


def get(url):
    parts = urlsplit(url)
    request = http.OutgoingRequest(http.Fields())
    request.set_method(http.Method_Get())
    scheme = http.Scheme_Https() if parts.scheme == "https" else http.Scheme_Http()
    request.set_scheme(scheme)
    request.set_authority(parts.netloc)
    request.set_path_with_query(parts.path + ("?" + parts.query if parts.query else ""))
    future = outgoing_handler.handle(request, None)
    with future.subscribe() as ready:
        ready.block()
    # Some(Ok(response)) or Some(Ok(Err(error code))) once ready.
    answer = future.get().value
    if isinstance(answer, Err):
        raise answer
    response = answer.value
    body = response.consume()
    stream = body.stream()
    chunks = []
    while True:
        try:
            chunks.append(stream.blocking_read(65536))
        except Err as e:
            if isinstance(e.value, streams.StreamError_Closed):
                break
            raise
    return response.status(), b"".join(chunks)


class Run(exports.Run):
    def run(self):
        url = environment.get_arguments()[1]
        try:
            status, body = get(url)
        except Err as e:
            print("error:", type(e.value).__name__, flush=True)
            exit.exit(Err(None))
        print(status, body.decode("utf-8", "replace"), flush=True)
