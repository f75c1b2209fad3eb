"""Pure-Python packages bundled into the runner (`build.sh --requirements`,
`sbx-wasm python build`): every module of each one is imported while the
runner is built, so that it lives in the snapshot; the component holds no
files to import from later. A module that cannot load here (an optional
dependency missing, another platform's code) is left out, and importing it
says why."""

import contextlib
import importlib
import os
import sys

# Served by bundled_tz; its data folders are no modules to import.
SKIP = {"tzdata"}

# build.sh writes this file into the folder of bundled packages: only that
# folder is scanned (others on the build's path, such as componentize-py's
# own environment, are not the runner's).
MARKER = "sbx-bundled-packages"


def _modules(folder, info):
    """The importable modules a wheel installed, from its RECORD."""
    try:
        with open(os.path.join(folder, info, "RECORD"), encoding="utf-8") as f:
            paths = [line.split(",")[0] for line in f]
    except OSError:
        return []
    modules = []
    for path in paths:
        if not path.endswith(".py") or ".dist-info/" in path:
            continue
        name = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        if all(part.isidentifier() for part in name.split(".")):
            modules.append(name)
    return sorted(modules)


def preload(unavailable, around=lambda name: contextlib.nullcontext()):
    """Import every bundled module; return their names, and put each one
    that fails in `unavailable` with its reason. Each import happens inside
    `around(name)`."""
    loaded = []
    for folder in list(sys.path):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        if MARKER not in names:
            continue
        infos = sorted(n for n in names if n.endswith(".dist-info"))
        for info in infos:
            if info.split("-")[0].lower() in SKIP:
                continue
            for name in _modules(folder, info):
                try:
                    with around(name):
                        importlib.import_module(name)
                    loaded.append(name)
                except Exception as e:  # noqa: BLE001 - any failure means "not here"
                    unavailable[name] = f"{type(e).__name__}: {e}"
    return loaded
