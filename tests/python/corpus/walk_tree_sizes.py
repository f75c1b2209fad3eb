from pathlib import Path

root = Path("/work")
listing = []
for p in sorted(root.rglob("*")):
    if p.is_file() and "out" not in p.parts:
        listing.append(f"{p.relative_to(root)}\t{p.stat().st_size}")
Path("/work/out/listing.txt").write_text("\n".join(listing) + "\n")
print(len(listing), "files")
print("\n".join(listing))
print("markdown:", [p.name for p in sorted(root.glob("docs/*.md"))])
