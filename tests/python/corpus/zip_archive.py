import zipfile

with zipfile.ZipFile("/work/out/bundle.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.write("/work/sales.csv", "sales.csv")
    z.write("/work/docs/start.md", "docs/start.md")
    z.writestr("README.txt", "bundle of inputs\n")
with zipfile.ZipFile("/work/out/bundle.zip") as z:
    for info in z.infolist():
        print(info.filename, info.file_size)
    print(z.read("README.txt").decode(), end="")
    print(z.testzip())
