import sys as _s


def _sbx_main():
    # The data runner's start: CPython's own `-c` runs this with
    # sys.argv = ["-c", SOURCE, NAME, ARGS...]. The script then runs as a
    # real __main__ module (pickle, unittest.main and doctest.testmod find
    # it), under its own name, with sys.argv = [NAME, ARGS...].
    import linecache
    import os
    import types

    source, name = _s.argv[1], _s.argv[2]
    _s.argv = _s.argv[2:]
    # As the stock runner: no working-folder entry on the import path.
    if _s.path and _s.path[0] == "":
        del _s.path[0]
    # What an ordinary process has: a home and a working folder (the run's
    # private /tmp: a library's look for a file "here" finds nothing
    # instead of leaving a refusal on record), a user, and a plot backend
    # that needs no display (matplotlib, imported in the runner's
    # snapshot, settled on the same).
    for key, value in (
        ("HOME", "/tmp"),
        ("USER", "sandbox"),
        ("MPLBACKEND", "Agg"),
        ("MPLCONFIGDIR", "/tmp/.matplotlib"),
    ):
        os.environ.setdefault(key, value)
    try:
        os.chdir("/tmp")
    except OSError:
        pass
    _as_a_process()
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    main.__file__ = name
    _s.modules["__main__"] = main
    try:
        exec(compile(source, name, "exec"), main.__dict__)
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code if -(2**31) <= code < 2**31 else 1
        print(code, file=_s.stderr)
        return 1
    except BaseException as e:
        import traceback  # only now: it costs a run 0.1 s to import

        # The script's frames only: this one is not the script's.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        return 1
    return 0


def _as_a_process():
    # The runner starts from a snapshot of an interpreter that imported
    # numpy, pandas and pyplot in the package's session: its exit() and
    # quit() end a session, not a script, so they are a script's again. (The
    # interpreter itself reseeds random and numpy.random at each run.)
    import _sitebuiltins
    import builtins

    for name in ("exit", "quit"):
        if type(getattr(builtins, name, None)) is not _sitebuiltins.Quitter:
            setattr(builtins, name, _sitebuiltins.Quitter(name, "Ctrl-D (i.e. EOF)"))


def _sbx_end(status):
    # How CPython ends a script, in the parts a script can see: its atexit
    # calls (logging's flush among them), then its objects let go (a file
    # it left open is flushed and closed), then the standard streams. Then
    # out, without tearing down the interpreter module by module: with
    # numpy and pandas loaded that is 0.1 s and 300 million fuel a run,
    # for nothing anyone sees. (The runner tells the host the code.)
    import atexit
    import gc
    import os

    atexit._run_exitfuncs()
    main = _s.modules.get("__main__")
    if main is not None:
        # As CPython's own module teardown: the builtins stay, for what a
        # finalizer calls.
        names = main.__dict__
        for name in [n for n in names if n != "__builtins__"]:
            del names[name]
    gc.collect()
    for stream in (_s.stdout, _s.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - as CPython's own exit does
            pass
    os._exit(status & 0xFF)  # as a process's status: -1 is 255


_sbx_end(_sbx_main())
