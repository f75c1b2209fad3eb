# sbx-corpus: hostile
import os
import subprocess

for name, f in (
    ("subprocess", lambda: subprocess.run(["cat", "/etc/passwd"], capture_output=True)),
    ("system", lambda: os.system("id")),
    ("popen", lambda: os.popen("id").read()),
):
    try:
        f()
        print("RAN", name)
    except (OSError, AttributeError) as e:
        print("blocked", name, type(e).__name__)
