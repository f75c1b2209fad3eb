import os
import tempfile

with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "part.txt")
    with open(p, "w") as f:
        f.write("scratch data\n")
    print(os.listdir(d), os.path.getsize(p))
with tempfile.NamedTemporaryFile("w+", suffix=".csv", delete=True) as f:
    f.write("a,b\n1,2\n")
    f.seek(0)
    print(f.read().splitlines(), f.name.endswith(".csv"))
print(os.path.isdir(tempfile.gettempdir()))
