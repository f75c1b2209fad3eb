import shutil
from pathlib import Path

report = "".join(f"row {i}: ok\n" for i in range(2000))
needed = len(report.encode())
usage = shutil.disk_usage("/work/out")
print(usage.total > 0, usage.total >= usage.used + usage.free)
if usage.free < needed:
    raise SystemExit(f"need {needed} bytes, {usage.free} free")
Path("/work/out/report.txt").write_text(report)
print("wrote", needed, "bytes")
try:
    shutil.disk_usage("/work/out/not-made-yet")
except FileNotFoundError:
    print("no such folder yet")
