#!/usr/bin/env bash
# Builds the Python runner component: CPython inside a WASI 0.2 command
# component of the sbx world, made by componentize-py (pinned below).
#
#   bash host/runners/python/build.sh    ->  target/py/sbx-python.wasm
#   bash host/runners/python/build.sh --requirements req.txt -o runner.wasm
#
# With --requirements, the pure-Python packages it names (every one pinned
# by hash: pip --require-hashes, wheels only, dependencies too) are bundled
# beside the runner's own (requirements.txt here): each of their modules is
# imported into the snapshot, and a wheel with native code is refused,
# named. `sbx-wasm python build` calls this.
#
# Everything lives in a build folder: the project's target/py, or
# $SBX_WASM_PY_BUILD_DIR (`sbx-wasm python build` sets it to the cache
# folder, so a read-only checkout builds too): a virtual environment for
# componentize-py, the staged WIT, the component. Nothing is installed
# globally, nothing written into the source tree but target/. A rebuild
# happens only when an input changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${SBX_WASM_PY_BUILD_DIR:-$root/target/py}"
componentize_py_version="0.25.1"
# The CPython inside that componentize-py (a test checks the runner says
# so): wheels and their dependencies are chosen for it, not for the
# python3 that runs pip.
runner_python="3.14"
mkdir -p "$out"

extra=""
target="$out/sbx-python.wasm"
publish=1
while [ $# -gt 0 ]; do
    case "$1" in
        --requirements) extra="$(realpath "$2")"; publish=0; shift 2 ;;
        -o) target="$2"; publish=0; shift 2 ;;
        *) echo "usage: build.sh [--requirements FILE] [-o OUT.wasm]" >&2; exit 2 ;;
    esac
done
[ -z "$extra" ] || [ -f "$extra" ] || { echo "python runner: no such requirements file: $extra" >&2; exit 2; }

# The WASI packages are the ones the host's wasmtime-wasi implements.
. "$here/../runner-wit.sh"
# The default runner, once made or found up to date, is also the user's.
trap 'status=$?; [ "$status" -ne 0 ] || [ "$publish" = 0 ] || publish_runner "$target"; exit "$status"' EXIT
wasi_wit="$(wasi_wit_dir "$root")"

stamp="$( (cat "$here/build.sh" "$here/../runner-wit.sh" "$here/requirements.txt" "$here/requirements-pure-part.txt" ${extra:+"$extra"} "$here/wit/runner.wit" "$root"/host/wit/*.wit "$here"/app/*.py; echo "$wasi_wit"; ls "$wasi_wit"; echo "$componentize_py_version") | sha256sum | cut -d' ' -f1)"
if [ -f "$target" ] && [ "$(cat "$target.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "python runner: up to date ($target)" >&2
    exit 0
fi
# Runners are also kept by that hash outside the checkout (the user's cache
# folder), so a fresh clone with the same inputs copies one instead of
# building it; a changed input is a new hash, never a stale runner.
cache="${SBX_WASM_RUNNER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm/python-runners}"
if [ -f "$cache/$stamp.wasm" ]; then
    mkdir -p "$(dirname "$target")"
    cp "$cache/$stamp.wasm" "$target.tmp"
    mv "$target.tmp" "$target"
    echo "$stamp" > "$target.stamp"
    echo "python runner: from the cache ($cache/$stamp.wasm)" >&2
    exit 0
fi

venv="$out/venv"
if [ ! -x "$venv/bin/componentize-py" ] \
    || [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("componentize-py"))' 2>/dev/null)" != "$componentize_py_version" ]; then
    echo "python runner: installing componentize-py $componentize_py_version into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "componentize-py==$componentize_py_version"
fi


# One work folder per set of requirements: builds of two sets never mix.
work="$out/build-$( (cat "$here/requirements.txt" "$here/requirements-pure-part.txt" ${extra:+"$extra"}) | sha256sum | cut -c1-16)"
mkdir -p "$work"
wit="$work/wit"
stage_wit "$root" "$wasi_wit" "$here/wit/runner.wit" "$wit"

# The bundled pure-Python packages, pinned by hash: wheels only (no
# package's setup code runs here), then each wheel's tags checked.
pylib="$work/pylib"
rm -rf "$pylib"
"$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
    --python-version "$runner_python" --implementation cp --require-hashes -r "$here/requirements.txt" ${extra:+-r "$extra"} --target "$pylib"
"$venv/bin/python" - "$pylib" <<'PY'
import pathlib, sys
native = []
for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.dist-info/WHEEL")):
    meta = wheel.read_text()
    tags = [l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Tag:")]
    if "Root-Is-Purelib: true" not in meta or not all(t.endswith("-none-any") for t in tags):
        native.append(f"{wheel.parent.name.removesuffix('.dist-info')} ({', '.join(tags)})")
if native:
    sys.exit("python runner: refused: a wheel with native code cannot run in the sandbox: "
             + "; ".join(native))
PY

# The pure-Python part of the packages whose wheels all carry an optional
# native accelerator (requirements-pure-part.txt says which and why): one
# wheel each, pinned by hash, unpacked without its native files. Its
# WHEEL metadata is rewritten to what the files now are: pure, any platform.
pure="$work/pure-part"
rm -rf "$pure"
"$venv/bin/pip" download --quiet --disable-pip-version-check --only-binary=:all: --no-deps \
    --python-version "$runner_python" --implementation cp --platform manylinux_2_17_x86_64 \
    --require-hashes -r "$here/requirements-pure-part.txt" -d "$pure"
"$venv/bin/python" - "$pure" "$pylib" <<'PY'
import pathlib, sys, zipfile
native = (".so", ".pyd", ".dylib", ".dll")
for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith("/") or name.endswith(native):
                continue
            data = z.read(name)
            if name.endswith(".dist-info/WHEEL"):
                data = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            dest = pathlib.Path(sys.argv[2], name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
PY

# The runner imports every module of the packages in the folder so marked.
touch "$pylib/sbx-bundled-packages"

echo "python runner: building with componentize-py $componentize_py_version" >&2
mkdir -p "$(dirname "$target")"
"$venv/bin/componentize-py" --quiet -d "$wit" -w sbx:python/runner \
    componentize -p "$here/app" -p "$pylib" runner -o "$target.tmp"
mv "$target.tmp" "$target"
echo "$stamp" > "$target.stamp"
if mkdir -p "$cache" 2>/dev/null && cp "$target" "$cache/$stamp.wasm.tmp" 2>/dev/null; then
    mv "$cache/$stamp.wasm.tmp" "$cache/$stamp.wasm"
fi
echo "python runner: $target ($(du -h "$target" | cut -f1))" >&2
