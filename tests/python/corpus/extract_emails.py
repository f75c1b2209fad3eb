import re

text = open("/work/notes.txt").read()
emails = sorted(set(re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text)))
domains = {e.split("@")[1] for e in emails}
print("\n".join(emails))
print("domains:", sorted(domains))
