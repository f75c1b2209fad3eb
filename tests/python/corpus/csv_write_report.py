import csv

rows = []
with open("/work/sales.csv") as f:
    for r in csv.DictReader(f):
        r["revenue"] = f"{int(r['units']) * float(r['price']):.2f}"
        rows.append(r)
rows.sort(key=lambda r: float(r["revenue"]), reverse=True)
with open("/work/out/report.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["date", "region", "product", "revenue"], extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
print(open("/work/out/report.csv").read(), end="")
