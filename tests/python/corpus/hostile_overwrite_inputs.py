# sbx-corpus: hostile
import os
import shutil

for action, f in (
    ("overwrite", lambda: open("/work/sales.csv", "w").write("gone")),
    ("delete", lambda: os.remove("/work/users.json")),
    ("rmtree", lambda: shutil.rmtree("/work/docs")),
    ("escape", lambda: open("/work/out/../../escaped.txt", "w").write("x")),
    ("symlink", lambda: os.symlink("/etc/passwd", "/work/out/link")),
):
    try:
        f()
        print("DID", action)
    except OSError as e:
        print("blocked", action, type(e).__name__)
