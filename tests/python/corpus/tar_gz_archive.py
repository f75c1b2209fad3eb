import tarfile

with tarfile.open("/work/out/docs.tar.gz", "w:gz") as t:
    t.add("/work/docs", arcname="docs")
with tarfile.open("/work/out/docs.tar.gz") as t:
    names = sorted(m.name for m in t.getmembers())
    print(names)
    t.extractall("/work/out/unpacked", filter="data")
print(open("/work/out/unpacked/docs/faq.md").read(), end="")
