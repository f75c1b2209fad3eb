// A wasi:http app as componentize-js builds one by default (its `fetch`
// and fetch-event features on): it answers each request by fetching the
// URL in its `to` query parameter with the standard `fetch`, which
// StarlingMonkey sends through wasi:http/outgoing-handler.
addEventListener("fetch", (event) =>
  event.respondWith(
    (async () => {
      const to = new URL(event.request.url).searchParams.get("to");
      try {
        const upstream = await fetch(to);
        const text = await upstream.text();
        return new Response(`upstream ${upstream.status}: ${text}`);
      } catch (e) {
        return new Response(`refused: ${e}`, { status: 502 });
      }
    })(),
  ),
);
