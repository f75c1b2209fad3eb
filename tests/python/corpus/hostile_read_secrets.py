# sbx-corpus: hostile
import os

for path in ("/etc/passwd", "/work/../../etc/shadow", os.path.expanduser("~/.ssh/id_rsa"), "/proc/self/environ"):
    try:
        open(path).read()
        print("READ", path)
    except OSError as e:
        print("blocked", path, type(e).__name__)
