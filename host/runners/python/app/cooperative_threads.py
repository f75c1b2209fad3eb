"""Threads, as far as one thread of control allows.

This CPython has no threads: `_thread.start_new_thread` fails. Ordinary
code uses threads to wait on several things at once (a pool of fetches, a
worker per file) and then joins them, and that code works here: a started
thread, or a task submitted to a `ThreadPoolExecutor`, is *pending* until
some thread of control has to wait (`join`, `Future.result`, a
`Queue.get`, an `Event.wait`, `time.sleep`, the pool's shutdown, or the end
of the script); then pending work runs, one piece at a time, each to its
end, in the order it was started. A thread that waits for work still to
start runs it. A thread that, run this way, waits (untimed) for something
no pending work will bring is *parked*: its wait raises an exception that
ends it (its `finally` blocks run), so that the wait it was run inside can
go on; this is what becomes of the daemon worker that loops on
`queue.get()`. A parked thread counts as alive and never runs again: work
handed to it later waits until its timeout, or, untimed, until `max_wall`
ends the run, as a deadlocked process would. A timed wait in a thread that
nothing can end sleeps for its timeout. `threading.current_thread()` and
`threading.local()` follow the thread that is running.

Processes cannot work: `multiprocessing` and `ProcessPoolExecutor` raise
ModuleNotFoundError saying so.
"""

import _thread
import _threading_local
import collections
import concurrent.futures
import concurrent.futures.thread
import itertools
import os
import threading
import time
from concurrent.futures import _base

# Pending work, oldest first: callables that run one piece of work to its end.
_pending = collections.deque()
# The threads running now, innermost last (a thread runs inside the wait
# of the one that let it run).
_running = []
# Started threads not yet ended (pending, running or parked).
_live = []
_ids = itertools.count(1 << 20)
_sleep = time.sleep
_current_thread = threading.current_thread


def run_pending():
    """Run pending work until none is left (what a wait does first)."""
    while _pending:
        _pending.popleft()()


class Parked(BaseException):
    """Raised in a thread run inside another's wait when it waits for
    something no pending work will bring: it cannot be resumed later."""


def _park(what):
    raise Parked(
        f"{current_thread().name} waits ({what}) for work that cannot run while the "
        f"thread that let it run waits; the sbx runner runs one thread at a time"
    )


def _run_one():
    if _pending:
        _pending.popleft()()
        return True
    return False


# --- threading.Thread -------------------------------------------------------

def _start(self):
    if not getattr(self, "_initialized", False):
        raise RuntimeError("thread.__init__() not called")
    if self._started.is_set():
        raise RuntimeError("threads can only be started once")
    self._sbx_state = "pending"
    self._ident = next(_ids)
    if hasattr(self, "_native_id"):
        self._native_id = self._ident
    self._started.set()
    _live.append(self)
    _pending.append(lambda: _run_thread(self))


def _run_thread(t):
    t._sbx_state = "running"
    _running.append(t)
    try:
        t.run()
    except Parked:
        t._sbx_state = "parked"
    except SystemExit:
        pass
    except BaseException as e:  # noqa: BLE001 - reported as a thread's error is
        threading.excepthook(threading.ExceptHookArgs((type(e), e, e.__traceback__, t)))
    finally:
        _running.pop()
        if t._sbx_state == "running":
            t._sbx_state = "done"
            _live.remove(t)


def _join(self, timeout=None):
    if not getattr(self, "_initialized", False):
        raise RuntimeError("Thread.__init__() not called")
    if not self._started.is_set():
        raise RuntimeError("cannot join thread before it is started")
    if self is current_thread():
        raise RuntimeError("cannot join current thread")
    state = getattr(self, "_sbx_state", None)
    if state is None:
        return  # the main thread, or a dummy: nothing of ours to wait for
    while self._sbx_state == "pending" and _run_one():
        pass
    if self._sbx_state in ("running", "parked"):
        # It waits, further out on this stack, for what is waiting here,
        # or it waits for good.
        _block(timeout, f"join {self.name}")


def _is_alive(self):
    state = getattr(self, "_sbx_state", None)
    if state is None:
        return _is_alive_native(self)
    return state != "done"


def _repr(self):
    state = getattr(self, "_sbx_state", None)
    if state is None:
        return _repr_native(self)
    status = "stopped" if state == "done" else "started"
    if self._daemonic:
        status += " daemon"
    return f"<{type(self).__name__}({self._name}, {status} {self._ident})>"


def current_thread():
    """The thread that is running: a started Thread while its run() runs."""
    return _running[-1] if _running else _current_thread()


def enumerate():
    """The live threads: the real ones and every started, unfinished one."""
    live = _enumerate_native()
    return live + [t for t in _live if t not in live]


def active_count():
    return len(enumerate())


# --- waiting ----------------------------------------------------------------

def _wait(self, timeout=None):
    """Condition.wait: let pending work run (it may be what notifies);
    if nothing notified and nothing is left to run, sleep out the timeout
    (untimed: until max_wall, as a deadlock would)."""
    if not self._is_owned():
        raise RuntimeError("cannot wait on un-acquired lock")
    waiter = _thread.allocate_lock()
    waiter.acquire()
    self._waiters.append(waiter)
    saved = self._release_save()
    try:
        while waiter.locked() and _run_one():
            pass
        if not waiter.locked():
            return True
        _block(timeout, "a condition")
        return not waiter.locked()
    finally:
        self._acquire_restore(saved)
        if waiter.locked():
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass


def _block(timeout, what):
    """A wait nothing pending can end: untimed in a thread run inside
    another's wait, park it; otherwise sleep out the timeout, or, untimed,
    until max_wall ends the run."""
    if timeout is None:
        if _running:
            _park(what)
        while True:
            _sleep(3600)
    if timeout > 0:
        _sleep(timeout)


def sleep(seconds):
    """time.sleep: pending work runs first, as it would meanwhile."""
    run_pending()
    _sleep(seconds)


# --- concurrent.futures.ThreadPoolExecutor ----------------------------------

class ThreadPoolExecutor(_base.Executor):
    """A thread pool whose tasks run when something waits for them (a
    result, `as_completed`, `wait`, shutdown), one at a time, in the order
    they were submitted."""

    _counter = itertools.count().__next__

    def __init__(self, max_workers=None, thread_name_prefix="", initializer=None,
                 initargs=(), **_ignored):
        if max_workers is not None and max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        self._max_workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
        self._thread_name_prefix = thread_name_prefix or f"ThreadPoolExecutor-{self._counter()}"
        self._initializer = initializer
        self._initargs = initargs
        self._initialized = False
        self._broken = False
        self._shutdown = False
        self._queued = collections.deque()

    def submit(self, fn, /, *args, **kwargs):
        if self._broken:
            raise concurrent.futures.thread.BrokenThreadPool(self._broken)
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future = _base.Future()
        item = (future, fn, args, kwargs)
        self._queued.append(item)
        _pending.append(lambda: self._run(item))
        return future

    def _run(self, item):
        try:
            self._queued.remove(item)
        except ValueError:
            return  # already run (by shutdown) or cancelled
        future, fn, args, kwargs = item
        if not future.set_running_or_notify_cancel():
            return
        if not self._initialized and self._initializer is not None:
            self._initialized = True
            try:
                self._initializer(*self._initargs)
            except BaseException:  # noqa: BLE001 - breaks the pool, as natively
                self._broken = "A thread initializer failed, the thread pool is not usable anymore"
                future.set_exception(concurrent.futures.thread.BrokenThreadPool(self._broken))
                for rest in list(self._queued):
                    self._queued.remove(rest)
                    rest[0].set_exception(concurrent.futures.thread.BrokenThreadPool(self._broken))
                return
        self._initialized = True
        worker = threading.Thread(name=f"{self._thread_name_prefix}_0")
        worker._sbx_state = "running"
        _running.append(worker)
        try:
            result = fn(*args, **kwargs)
        except Parked as e:
            future.set_exception(RuntimeError(str(e)))
        except BaseException as e:  # noqa: BLE001 - handed to the future
            future.set_exception(e)
        else:
            future.set_result(result)
        finally:
            _running.pop()

    def shutdown(self, wait=True, *, cancel_futures=False):
        self._shutdown = True
        if cancel_futures:
            while self._queued:
                self._queued.popleft()[0].cancel()
        if wait:
            while self._queued:
                self._run(self._queued[0])


def install():
    """Make threading and concurrent.futures cooperative."""
    global _is_alive_native, _repr_native, _enumerate_native
    _is_alive_native = threading.Thread.is_alive
    _repr_native = threading.Thread.__repr__
    _enumerate_native = threading.enumerate
    threading.Thread.start = _start
    threading.Thread.join = _join
    threading.Thread.is_alive = _is_alive
    threading.Thread.__repr__ = _repr
    threading.current_thread = current_thread
    threading.currentThread = current_thread
    threading.enumerate = enumerate
    threading.active_count = active_count
    threading.activeCount = active_count
    threading.Condition.wait = _wait
    # Thread-local data by the running thread, in pure Python (the C one
    # keys by the one real thread).
    _threading_local.current_thread = current_thread
    threading.local = _threading_local.local
    time.sleep = sleep
    concurrent.futures.ThreadPoolExecutor = ThreadPoolExecutor
    concurrent.futures.thread.ThreadPoolExecutor = ThreadPoolExecutor
    if hasattr(os, "process_cpu_count"):
        os.process_cpu_count = lambda: 1
    os.cpu_count = lambda: 1
