import hashlib
from pathlib import Path

lines = []
for p in sorted(Path("/work").glob("*.*")):
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    lines.append(f"{digest}  {p.name}")
Path("/work/out/SHA256SUMS").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
print(hashlib.md5(b"abc").hexdigest(), hashlib.blake2b(b"abc", digest_size=8).hexdigest())
