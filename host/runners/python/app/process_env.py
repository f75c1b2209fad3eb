"""What an ordinary process finds about itself, where WASI has nothing.

There is no user database here (no `pwd`), so `Path.home()`,
`os.path.expanduser("~")` and `getpass.getuser()` would fail. Where the
grant's `env` sets `HOME`, `USER` or `LOGNAME` those win; otherwise the home
is the run's private `/tmp` and the user is `sandbox`. Patched at build time
and consulted only when called: touching `os.environ` at every run's start
costs each run more than the rest of its start-up.
"""

import getpass
import os
import posixpath

HOME = "/tmp"
USER = "sandbox"

_expanduser = posixpath.expanduser
_getuser = getpass.getuser


def expanduser(path):
    """posixpath.expanduser, with HOME as the default home."""
    expanded = _expanduser(path)
    tilde, slash = ("~", "/") if isinstance(expanded, str) else (b"~", b"/")
    if expanded == tilde or expanded.startswith(tilde + slash):
        home = HOME if isinstance(expanded, str) else HOME.encode()
        return home + expanded[1:]
    return expanded


def getuser():
    """getpass.getuser, with USER as the default name."""
    try:
        return _getuser()
    except (OSError, ImportError, KeyError):
        return USER


def install():
    posixpath.expanduser = expanduser
    os.path.expanduser = expanduser
    getpass.getuser = getuser
