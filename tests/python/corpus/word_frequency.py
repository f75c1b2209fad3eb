import re
from collections import Counter

text = open("/work/notes.txt", encoding="utf-8").read().lower()
words = re.findall(r"[a-z']+", text)
for word, n in Counter(w for w in words if len(w) > 3).most_common(5):
    print(f"{word}\t{n}")
