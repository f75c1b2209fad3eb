import concurrent.futures
import hashlib
from pathlib import Path

files = sorted(p for p in Path("/work").glob("*.*"))


def digest(p):
    return p.name, hashlib.sha1(p.read_bytes()).hexdigest()[:12]


with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    for name, d in pool.map(digest, files):
        print(name, d)
    futures = {pool.submit(lambda p: p.stat().st_size, p): p.name for p in files}
    sizes = {futures[f]: f.result() for f in concurrent.futures.as_completed(futures)}
print(sum(sizes.values()), len(sizes))
