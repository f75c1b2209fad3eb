"""A data-analysis agent: read a CSV from the read mount, summarise it, write
the summary into the write mount. Everything it touches is granted."""

import csv
import json
import statistics
from collections import defaultdict
from datetime import date
from pathlib import Path

rows = list(csv.DictReader(Path("/work/sales.csv").open(newline="")))

revenue_by_region = defaultdict(float)
units_by_product = defaultdict(int)
daily = defaultdict(float)
for r in rows:
    revenue = int(r["units"]) * float(r["unit_price"])
    revenue_by_region[r["region"]] += revenue
    units_by_product[r["product"]] += int(r["units"])
    daily[date.fromisoformat(r["date"])] += revenue

summary = {
    "rows": len(rows),
    "first_day": min(daily).isoformat(),
    "last_day": max(daily).isoformat(),
    "revenue_total": round(sum(revenue_by_region.values()), 2),
    "revenue_by_region": {k: round(v, 2) for k, v in sorted(revenue_by_region.items())},
    "top_product_by_units": max(units_by_product, key=units_by_product.get),
    "daily_revenue_mean": round(statistics.mean(daily.values()), 2),
    "daily_revenue_stdev": round(statistics.stdev(daily.values()), 2),
}

out = Path("/work/out/summary.json")
out.write_text(json.dumps(summary, indent=2) + "\n")
print(f"wrote {out}: {summary['rows']} rows, total {summary['revenue_total']}")
