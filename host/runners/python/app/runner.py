"""Entry point of the Python runner component.

    sbx-python -c CODE [NAME [ARGS...]]   run CODE; sys.argv = [NAME or "-c", ARGS...]
    sbx-python FILE [ARGS...]             run FILE (a path inside a mount)
    sbx-python - [ARGS...]                run the script read from stdin

`sbx-wasm run script.py` uses the first form: the host reads the script (the
user's input, not the guest's) and passes it in, so the script need not sit in
a mount. The script runs as `__main__`; an uncaught exception prints its
traceback, is reported to the host (its type, message and the script's line:
the run report's `error`) and exits 1; `sys.exit(n)` exits n (the host hears
n from the runner: WASI 0.2 carries only success or failure).
"""

import importlib
import importlib.machinery
import inspect
import io
import linecache
import os
import pkgutil
import sys
import traceback
import types

from wit_world import exports
from wit_world.imports import outcome

import bundled_packages
import bundled_tz
import cooperative_threads
import http_clients
import process_env
import sbx
import wasi_waits

# Before any import below: urllib.request defines its HTTPS handler only if
# http.client has HTTPS, and no socket may be made into the snapshot.
http_clients.install_http_client()
http_clients.refuse_sockets()

# The standard library a script can import. componentize-py snapshots the
# interpreter after this module loads: modules imported here live in the
# snapshot, and nothing else of the standard library is in the component.
PRELOADED = """
abc argparse array ast asyncio base64 binascii bisect calendar cmath codecs collections
collections.abc configparser contextlib copy csv dataclasses datetime decimal difflib email
email.message enum fnmatch fractions functools glob graphlib gzip hashlib heapq hmac html
html.parser inspect io ipaddress itertools json keyword locale logging math numbers operator
os.path pathlib platform pprint queue random re secrets shlex shutil socket sqlite3 statistics
string struct subprocess tarfile tempfile textwrap threading time tokenize tomllib traceback
types typing unicodedata urllib.parse uuid warnings weakref xml.etree.ElementTree zipfile
zlib zoneinfo
encodings.ascii encodings.base64_codec encodings.cp1252 encodings.hex_codec encodings.idna
encodings.latin_1 encodings.punycode encodings.raw_unicode_escape encodings.unicode_escape
encodings.utf_16 encodings.utf_32 encodings.utf_8_sig
""".split()
for _name in PRELOADED:
    __import__(_name)

# More of the standard library, where this CPython build has it: a module
# that cannot load here (a missing C extension) is left out, and importing
# it says why (sbx.UNAVAILABLE).
OPTIONAL = """
bz2 concurrent.futures concurrent.futures.thread cProfile copyreg dis doctest
email.charset email.encoders email.generator email.headerregistry email.mime.application
email.mime.base email.mime.multipart email.mime.text email.parser email.policy email.utils
filecmp fileinput getopt gettext http http.client http.cookies importlib.resources
importlib.metadata lzma mimetypes netrc optparse pickle pickletools profile pstats quopri
reprlib sched selectors stat string.templatelib symtable timeit unittest unittest.mock
urllib.error urllib.request urllib.response wave xml.dom xml.dom.minidom xml.sax
xml.sax.saxutils xml.sax.expatreader xml.dom.expatbuilder xml.dom.pulldom zipapp
encodings.cp437 encodings.cp850 encodings.cp852 encodings.cp858 encodings.cp866
encodings.cp1250 encodings.cp1251 encodings.cp1253 encodings.cp1254 encodings.iso8859_2
encodings.iso8859_15 encodings.koi8_r encodings.mac_roman encodings.utf_16_be
encodings.utf_16_le encodings.utf_32_be encodings.utf_32_le encodings.utf_7
_strptime _pydatetime _pydecimal _pyio _pylong _py_abc _threading_local colorsys compileall
py_compile getpass mailbox modulefinder plistlib pyclbr tabnanny trace tracemalloc wsgiref
wsgiref.simple_server wsgiref.util wsgiref.headers wsgiref.validate xmlrpc xmlrpc.client
xmlrpc.server ftplib imaplib poplib smtplib socketserver sre_compile sre_constants sre_parse
webbrowser dbm dbm.dumb dbm.sqlite3 shelve compression.gzip compression.zlib nturl2path pydoc pydoc_data pydoc_data.topics code codeop _ast_unparse
""".split()

# Every submodule of these packages (every codec, the CJK ones included;
# logging.handlers, http.cookiejar, json.tool, email.mime.*, ...), where
# this build has it. A package's __main__ is a command, not a module.
WHOLE_PACKAGES = """
asyncio collections concurrent email encodings html http importlib json logging sqlite3
unittest urllib wsgiref xml xmlrpc zoneinfo
""".split()
_listed = set(OPTIONAL)
for _package in WHOLE_PACKAGES:
    _path = importlib.import_module(_package).__path__
    for _info in pkgutil.walk_packages(_path, _package + ".", onerror=lambda name: None):
        if _info.name.rsplit(".", 1)[-1] != "__main__" and _info.name not in _listed:
            _listed.add(_info.name)
            OPTIONAL.append(_info.name)

# The standard library modules that cannot work here, and why: importing
# one fails at once with this reason.
NOT_HERE = {}
for _names, _why in (
    ("multiprocessing _multiprocessing _posixsubprocess _posixshmem pty venv ensurepip",
     "it starts processes, and a WASI guest has none (subprocess imports, and fails at call)"),
    ("_interpreters _interpchannels _interpqueues _remote_debugging",
     "it needs subinterpreters or real threads; the runner runs threads cooperatively"),
    ("ctypes _ctypes", "it loads native code, which a wasm guest cannot"),
    ("ssl _ssl", "there is no TLS inside the runner: https goes through the host's egress "
     "broker (urllib.request, http.client, requests or sbx.fetch)"),
    ("curses _curses _curses_panel readline termios tty tkinter _tkinter turtle turtledemo "
     "idlelib", "it needs a terminal or a display, and the runner has plain streams"),
    ("fcntl grp pwd resource syslog mmap",
     "WASI has no such operating-system service"),
    ("bz2 _bz2 lzma _lzma _zstd _dbm _gdbm _hashlib _uuid",
     "its C library is not in this CPython build (hashlib and uuid work without it)"),
    ("_aix_support _android_support _apple_support _ios_support _osx_support _scproxy "
     "_overlapped _winapi _wmi msvcrt nt winreg winsound",
     "it belongs to another operating system"),
    ("antigravity this", "an easter egg, left out"),
    ("numpy pandas matplotlib scipy sklearn statsmodels seaborn PIL lxml",
     "it has native code; it is in the data runner: run the script with "
     "`sbx-wasm run --data` (numpy, pandas, matplotlib, scipy, scikit-learn; no network)"),
):
    for _name in _names.split():
        NOT_HERE[_name] = _why
UNAVAILABLE = {}
for _name in OPTIONAL:
    if _name in NOT_HERE:
        continue
    _before = set(sys.modules)
    try:
        __import__(_name)
    except Exception as _e:  # noqa: BLE001 - any failure means "not here"
        UNAVAILABLE[_name] = f"{type(_e).__name__}: {_e}"
        continue
    # A module that drags in one that cannot work here (concurrent.futures
    # .process imports multiprocessing) is left out with it, so neither is
    # half-importable from the snapshot.
    _dragged = sorted((set(sys.modules) - _before) & NOT_HERE.keys())
    if _dragged:
        for _new in set(sys.modules) - _before:
            del sys.modules[_new]
        UNAVAILABLE[_name] = f"it needs {_dragged[0]}: {NOT_HERE[_dragged[0]]}"
        continue
    PRELOADED.append(_name)

# The pure-Python packages bundled into this runner, every module of each.
PACKAGES = bundled_packages.preload(UNAVAILABLE, around=http_clients.ssl_names_for)
PRELOADED.extend(PACKAGES)
http_clients.install_urllib3()
http_clients.install_httpx()


class _NotInSandbox:
    """Import hook, first on sys.meta_path: a module outside the snapshot
    fails at once with a clear message, instead of probing the host's folders
    for it (each probe would be a denied, audited filesystem operation).
    Once a script puts a folder of its own on sys.path, imports search as
    usual."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if sys.path:
            return None
        for finder in (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter):
            if finder.find_spec(name) is not None:
                return None
        if name in NOT_HERE:
            raise ModuleNotFoundError(
                f"No module named {name!r} in the sbx Python runner: {NOT_HERE[name]}",
                name=name,
            )
        if name in UNAVAILABLE:
            raise ModuleNotFoundError(
                f"No module named {name!r} in the sbx Python runner: {UNAVAILABLE[name]}",
                name=name,
            )
        raise ModuleNotFoundError(
            f"No module named {name!r}: the sbx Python runner has the standard library "
            f"modules listed in sbx.PRELOADED and the packages bundled into it "
            f"(sbx.PACKAGES; `sbx-wasm python build --requirements` bundles pure-Python "
            f"ones); add a folder of your own modules to sys.path from a mount",
            name=name,
        )


# zoneinfo from the bundled database, never the host's folders.
bundled_tz.install()


def _no_host_config_files():
    """Standard modules that read the host's configuration files: each
    read would be a denied, audited probe of the host, recorded as the
    script's doing. mimetypes gets its built-in table only (read into the
    snapshot now); pdb (a doctest run makes one) reads no ~/.pdbrc."""
    import mimetypes

    mimetypes.knownfiles = []
    mimetypes.init()
    pdb = sys.modules.get("pdb")
    if pdb is not None:
        init = pdb.Pdb.__init__

        def no_rc_init(self, *args, **kwargs):
            if len(args) < 6:
                kwargs.setdefault("readrc", False)
            init(self, *args, **kwargs)

        pdb.Pdb.__init__ = no_rc_init


_no_host_config_files()

# asyncio.run with an event loop that needs no socket (WASI has none here).
wasi_waits.install()
# Threads and thread pools, run cooperatively (see the module's notes).
cooperative_threads.install()
# A home and a user name (see the module's notes).
process_env.install()

# Imports look only at the snapshot until a script adds a mount folder.
sys.path.clear()
sys.meta_path.insert(0, _NotInSandbox)
sbx.PRELOADED = tuple(PRELOADED)
sbx.UNAVAILABLE = dict(UNAVAILABLE)
sbx.NOT_HERE = dict(NOT_HERE)
sbx.PACKAGES = tuple(PACKAGES)

USAGE = "usage: sbx-python (-c CODE [NAME] | FILE | -) [ARGS...]"

_read_lines_from_disk = linecache.updatecache


def _lines_from_mounts_only(filename, module_globals=None):
    """Tracebacks read source lines from files. The runner's own files are
    in no mount: reading them would be a denied, audited probe of the host
    (a script's SyntaxError would look like 13 attempts to read the host).
    Lines come from the script's own source (registered in main) and from
    files below the folders a script put on sys.path (its mounts)."""
    if filename and not filename.startswith("<"):
        path = os.path.abspath(filename)
        for folder in sys.path:
            if folder and path.startswith(os.path.join(os.path.abspath(folder), "")):
                return _read_lines_from_disk(filename, module_globals)
    return []


linecache.updatecache = _lines_from_mounts_only

# Names of sources handed in (-c CODE, stdin), which are not files.
_SOURCE_NAMES = set()


def _sources_are_not_files(event, args):
    """An audit hook. When the parser reports a syntax error, or a
    traceback underlines an expression, CPython opens the source file by
    name to quote the line, falling back to the source it was given. For a
    source handed in, and for the pseudo-files "<string>" and "<unknown>",
    that open would be a denied probe of the host, recorded as the script's
    doing; refusing it here makes CPython use the source it already has."""
    if event != "open" or not args or not isinstance(args[0], str):
        return
    path, mode = args[0], (args[1] if len(args) > 1 and isinstance(args[1], str) else "r")
    reading = not any(m in mode for m in "wax+")
    if reading and (path in _SOURCE_NAMES or (path.startswith("<") and path.endswith(">"))):
        raise FileNotFoundError(f"{path} is a source handed to the runner, not a file")


sys.addaudithook(_sources_are_not_files)

_getsourcefile = inspect.getsourcefile


def _getsourcefile_without_probe(obj):
    """inspect (doctest, a traceback's source) asks whether a code
    object's file exists before it looks in linecache; for a source handed
    in, or "<string>", that is a denied probe of the host. Answer from
    linecache for those names, as inspect would after the probe."""
    try:
        name = inspect.getfile(obj)
    except TypeError:
        return _getsourcefile(obj)
    if name in _SOURCE_NAMES or (name.startswith("<") and name.endswith(">")):
        return name if name in linecache.cache else None
    return _getsourcefile(obj)


inspect.getsourcefile = _getsourcefile_without_probe


def _load(argv):
    if not argv:
        raise _Usage("no script given")
    if argv[0] == "-c":
        if len(argv) < 2:
            raise _Usage("-c needs CODE")
        name = argv[2] if len(argv) > 2 else "-c"
        _SOURCE_NAMES.add(name)
        return argv[1], name, [name] + argv[3:]
    if argv[0] == "-":
        _SOURCE_NAMES.add("<stdin>")
        return sys.stdin.read(), "<stdin>", ["-"] + argv[1:]
    with open(argv[0], encoding="utf-8") as f:
        source = f.read()
    # As python does: the script's folder (inside a mount) is importable.
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    return source, argv[0], argv


class _Usage(Exception):
    pass


def _exit_code(code):
    if code is None:
        return 0
    if isinstance(code, int):
        # WASI carries success or failure; a code past 32 bits is a failure,
        # never a trap.
        return code if -(2**31) <= code < 2**31 else 1
    print(code, file=sys.stderr)
    return 1


def _report(exc, name):
    """Tell the host which exception the script ended on: its type (with
    its module when not a builtin), message, and the line of the innermost
    frame in the script itself (a SyntaxError's own line)."""
    kind = type(exc).__qualname__
    module = type(exc).__module__
    if module not in ("builtins", "__main__"):
        kind = f"{module}.{kind}"
    line = None
    if isinstance(exc, SyntaxError) and exc.filename == name:
        line = exc.lineno
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == name:
            line = tb.tb_lineno
        tb = tb.tb_next
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a __str__ that raises
        message = "<the exception's message could not be made>"
    if line is not None and not 0 <= line < 2**32:
        line = None
    try:
        outcome.script_failed(outcome.ScriptError(kind, message, line))
    except BaseException:  # noqa: BLE001 - the report is a courtesy
        pass


def main(argv):
    try:
        source, name, script_argv = _load(argv)
    except _Usage as e:
        print(f"sbx-python: {e}\n{USAGE}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"sbx-python: cannot read {argv[0]}: {e}", file=sys.stderr)
        return 2
    sys.argv = script_argv
    # The script's own lines, for its tracebacks (no file is read for them).
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    # A real __main__ module, as python makes one: pickle finds the
    # script's classes in it, unittest.main() and doctest.testmod() its
    # tests. `python -c` sets no __file__.
    main_module = types.ModuleType("__main__")
    main_module.__builtins__ = __builtins__
    if name != "-c":
        main_module.__file__ = name
    sys.modules["__main__"] = main_module
    try:
        code = compile(source, name, "exec")
        exec(code, main_module.__dict__)
        status = 0
    except SystemExit as e:
        status = _exit_code(e.code)
    except BaseException as e:
        traceback.print_exc()
        _report(e, name)
        status = 1
    # As python waits for its threads (and thread pools) before it exits.
    try:
        cooperative_threads.run_pending()
    except SystemExit as e:
        status = status or _exit_code(e.code)
    except BaseException as e:
        traceback.print_exc()
        if not status:
            _report(e, name)
        status = status or 1
    return status


class _WholeWrites(io.RawIOBase):
    """A raw stdout/stderr whose write delivers every byte: WASI may accept
    part of a large write (the stream's write budget), and a text stream
    over a raw file drops what a short write left. The host meters the
    bytes; past max_output_bytes the run halts instead."""

    def __init__(self, fd):
        self._fd = fd

    def writable(self):
        return True

    def fileno(self):
        return self._fd

    def write(self, b):
        view = memoryview(b).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self._fd, view[done:])
        return done


def _whole_stdio():
    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        new = io.TextIOWrapper(
            _WholeWrites(fd),
            encoding=getattr(old, "encoding", None) or "utf-8",
            errors="backslashreplace",
            write_through=True,
        )
        setattr(sys, name, new)
        setattr(sys, f"__{name}__", new)


def _warm_up():
    """Work every run does, done once while the runner is built, so that
    what it initialises lazily (the parser's tables, the print and text
    paths, type caches) is in the snapshot instead of being redone by each
    run; then freeze the heap for the garbage collector. A collection then
    looks only at what the run made: the snapshot's objects are never
    scanned, so their pages are not copied into every run (copy on write)."""
    import gc

    sink = io.StringIO()
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile("print('warm', 1, file=sink)\n", "<warm-up>", "exec"), scope | {"sink": sink})
    io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True).write("warm\n")
    gc.collect()
    gc.freeze()


# Set once here (the snapshot keeps them): every run writes through them.
_whole_stdio()
_warm_up()


class Run(exports.Run):
    def run(self) -> None:
        status = main(sys.argv[1:])
        sys.stdout.flush()
        sys.stderr.flush()
        if status != 0:
            # WASI 0.2 carries only failure (as 1): tell the host the code
            # first, then exit with failure (wasi:cli/exit).
            try:
                outcome.exit_code(status)
            except BaseException:  # noqa: BLE001 - the code is a courtesy
                pass
            os._exit(status)
