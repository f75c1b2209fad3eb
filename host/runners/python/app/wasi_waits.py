"""asyncio without sockets, as a sandboxed script must have it.

asyncio: WASI 0.2 gives the script no socket, and CPython's event loop
wants one (a self-pipe made with socketpair()). SandboxEventLoop keeps no
self-pipe and waits on nothing but time, so asyncio.run works for
coroutines that need no sockets: timers, gather, queues, tasks, async
generators, and sbx calls (which block the loop while they run). Opening a
connection or a server says sockets are not available. (Threads: cooperative_threads.)"""

import asyncio
import selectors
import time
from asyncio import unix_events

_NO_SOCKETS = "sockets are not available in the sbx sandbox (use sbx.fetch)"


class _TimeOnlySelector(selectors.BaseSelector):
    """A selector with nothing to select: waiting is sleeping."""

    def __init__(self):
        self._map = {}

    def register(self, fileobj, events, data=None):
        raise OSError(_NO_SOCKETS)

    def unregister(self, fileobj):
        raise KeyError(fileobj)

    def select(self, timeout=None):
        if timeout is None:
            # Nothing scheduled and nothing to wait for: the loop would
            # wait forever, as CPython's does; here that ends at max_wall.
            while True:
                time.sleep(3600)
        if timeout > 0:
            time.sleep(timeout)
        return []

    def get_map(self):
        return self._map

    def close(self):
        pass


class SandboxEventLoop(unix_events._UnixSelectorEventLoop):
    """The event loop asyncio.run makes in the sandbox."""

    def __init__(self, selector=None):
        super().__init__(selector or _TimeOnlySelector())

    def _make_self_pipe(self):
        self._ssock = self._csock = None
        self._internal_fds = 0

    def _close_self_pipe(self):
        pass

    def _write_to_self(self):
        pass

    def run_in_executor(self, executor, func, *args):
        # No threads in the sandbox: the call runs now, in the loop's
        # thread (asyncio.to_thread works; it blocks the loop meanwhile).
        future = self.create_future()
        try:
            future.set_result(func(*args))
        except BaseException as e:  # noqa: BLE001 - handed to the awaiter
            future.set_exception(e)
        return future

    async def shutdown_default_executor(self, timeout=None):
        pass

    async def getaddrinfo(self, *args, **kwargs):
        raise OSError(_NO_SOCKETS)

    async def getnameinfo(self, *args, **kwargs):
        raise OSError(_NO_SOCKETS)


def install():
    """Make SandboxEventLoop the loop every new event loop is."""
    unix_events._UnixDefaultEventLoopPolicy._loop_factory = SandboxEventLoop
    asyncio.SelectorEventLoop = SandboxEventLoop
    unix_events.SelectorEventLoop = SandboxEventLoop
    if hasattr(asyncio, "EventLoop"):
        asyncio.EventLoop = SandboxEventLoop
