import difflib

a = open("/work/notes.txt").read().splitlines(keepends=True)
b = open("/work/notes_v2.txt").read().splitlines(keepends=True)
diff = list(difflib.unified_diff(a, b, "notes.txt", "notes_v2.txt"))
print("".join(diff), end="")
print(round(difflib.SequenceMatcher(None, "".join(a), "".join(b)).ratio(), 3))
print(difflib.get_close_matches("gadgit", ["gadget", "widget", "gizmo"]))
