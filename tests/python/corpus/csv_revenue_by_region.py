"""Revenue by region from a CSV, written as JSON."""
import csv
import json
from collections import defaultdict

totals = defaultdict(float)
with open("/work/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["units"]) * float(row["price"])
summary = {region: round(total, 2) for region, total in sorted(totals.items())}
with open("/work/out/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
for region, total in summary.items():
    print(f"{region:>6}: {total:8.2f}")
