import csv

with open("/work/scores.tsv", newline="") as f:
    rows = list(csv.DictReader(f, delimiter="\t"))
ranked = sorted(rows, key=lambda r: int(r["score"]), reverse=True)
for rank, r in enumerate(ranked, 1):
    print(rank, r["name"], r["score"], "pass" if int(r["score"]) >= 80 else "fail")
