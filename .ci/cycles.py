#!/usr/bin/env python3
"""Import cycles between sibling modules of one Rust crate.

Usage: cycles.py SRC_DIR [ROOT_FILE]   (ROOT_FILE: lib.rs or main.rs)

Each source file is a module (`a/b.rs` and `a/b/mod.rs` are `a::b`). A
reference is any `crate::`, `super::` or `self::` path in code or in a `use`
tree (braces expanded), resolved to the deepest module that exists; an item
the crate root re-exports (`pub use a::{X, Y}` in ROOT_FILE) resolves to
the module it comes from, so `crate::X` is an edge to `a`. An edge between
two modules is charged to the pair of siblings under their common parent
(`a::b::c` -> `a::d` is `b` -> `d` under `a`), and any strongly connected
group of two or more siblings is a cycle. Test code (`tests.rs`, and a
trailing `#[cfg(test)] mod tests { .. }`) is left out: tests may reach
anywhere. Prints one line per crate; exits 1 when there is a cycle.
"""
import os
import re
import sys


def module_of(rel):
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def strip(text):
    text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return text


def expand(tree):
    """Paths of a `use` tree: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    out = []
    for item in items:
        if item:
            out += [prefix + p for p in expand(item)]
    return out


def paths(text):
    found = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        found += expand(m.group(1))
    text = re.sub(r"\buse\s+[^;]+;", "", text)
    found += re.findall(r"\b(?:crate|super|self)(?:::\w+)+", text)
    return found


def absolute(path, here):
    """`path` made absolute from module `here` (`a/b.rs` and `a/b/mod.rs`
    are both `a::b`, whose `super` is `a`)."""
    parts = path.split("::")
    if parts[0] == "crate":
        return tuple(parts[1:])
    base = list(here)
    while parts and parts[0] in ("super", "self"):
        if parts[0] == "super":
            if not base:
                return None
            base.pop()
        parts = parts[1:]
    return tuple(base + parts)


def main():
    root = sys.argv[1]
    root_file = sys.argv[2] if len(sys.argv) > 2 else "lib.rs"
    files = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs") and name != "tests.rs":
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                files[module_of(rel)] = strip(open(path).read())
    modules = set(files)
    # Items the crate root re-exports, by name -> the module they come from.
    reexport = {}
    root_text = files.get((), "")
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", root_text):
        for p in expand(m.group(1)):
            parts = p.removeprefix("crate::").removeprefix("self::").split("::")
            reexport[parts[-1]] = tuple(parts[:-1]) if tuple(parts) not in modules else tuple(parts)

    def resolve(parts):
        if parts and parts[0] in reexport and (parts[0],) not in modules:
            parts = reexport[parts[0]] + parts[1:]
        best = ()
        for i in range(1, len(parts) + 1):
            if parts[:i] in modules:
                best = parts[:i]
        return best

    deps, why = {}, {}
    for here, text in files.items():
        if here == ():
            continue
        for p in paths(text):
            target = absolute(p, here)
            if target is None:
                continue
            target = resolve(target)
            if not target:
                continue
            n = 0
            while n < min(len(here), len(target)) and here[n] == target[n]:
                n += 1
            if n == len(here) or n == len(target):
                continue  # a module and its own ancestor or descendant
            parent = here[:n]
            deps.setdefault(parent, {}).setdefault(here[n], set()).add(target[n])
            why.setdefault((parent, here[n], target[n]), f"{'::'.join(here)}: {p}")

    cycles = []
    for parent, graph in sorted(deps.items()):
        for group in strongly_connected(graph):
            if len(group) > 1:
                cycles.append("::".join(parent + ("{" + ", ".join(sorted(group)) + "}",)))
                for a in sorted(group):
                    for b in sorted(graph[a] & set(group)):
                        print(f"  edge {a} -> {b}, e.g. {why[(parent, a, b)]}")
    edges = sum(len(t) for g in deps.values() for t in g.values())
    print(f"{root}: {len(modules) - 1} modules, {edges} sibling edges, cycles: {cycles or 'none'}")
    return 1 if cycles else 0


def strongly_connected(graph):
    index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            groups.append(group)

    for v in list(graph):
        if v not in index:
            visit(v)
    return groups


if __name__ == "__main__":
    sys.exit(main())
