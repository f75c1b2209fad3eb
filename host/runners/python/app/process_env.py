"""What an ordinary process finds about itself, where WASI has nothing.

There is no user database here (no `pwd`), so `Path.home()`,
`os.path.expanduser("~")` and `getpass.getuser()` would fail. Where the
grant's `env` sets `HOME`, `USER` or `LOGNAME` those win; otherwise the home
is the run's private `/tmp` and the user is `sandbox`. Patched at build time
and consulted only when called: touching `os.environ` at every run's start
costs each run more than the rest of its start-up.

WASI has no `statvfs`, so `shutil.disk_usage` is missing; here it reports
the space the run really has, its write quota (the host's `disk-space`),
for any path that exists.
"""

import collections
import getpass
import os
import posixpath
import shutil

from wit_world.imports import fs

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


_usage = collections.namedtuple("usage", "total used free")


def disk_usage(path):
    """shutil.disk_usage: the run's write quota, wherever `path` is."""
    os.stat(path)  # a missing path raises as natively
    space = fs.disk_space()
    return _usage(space.total, space.used, space.free)


def install():
    posixpath.expanduser = expanduser
    os.path.expanduser = expanduser
    getpass.getuser = getuser
    shutil.disk_usage = disk_usage
    if "disk_usage" not in shutil.__all__:
        shutil.__all__.append("disk_usage")
