import filecmp
import shutil

shutil.copytree("/work/docs", "/work/out/docs_copy")
shutil.copy("/work/notes.txt", "/work/out/docs_copy/notes.txt")
cmp = filecmp.dircmp("/work/docs", "/work/out/docs_copy")
print("same:", sorted(cmp.same_files), "only copy:", sorted(cmp.right_only))
shutil.move("/work/out/docs_copy/faq.md", "/work/out/docs_copy/questions.md")
print(sorted(p for p in __import__("os").listdir("/work/out/docs_copy")))
