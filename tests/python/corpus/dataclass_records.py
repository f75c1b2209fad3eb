import csv
import json
from dataclasses import asdict, dataclass, field


@dataclass(order=True)
class Sale:
    revenue: float
    region: str = field(compare=False)
    product: str = field(compare=False)


with open("/work/sales.csv") as f:
    sales = [Sale(int(r["units"]) * float(r["price"]), r["region"], r["product"]) for r in csv.DictReader(f)]
top = sorted(sales, reverse=True)[:3]
print(json.dumps([asdict(s) for s in top]))
print(max(sales).product, min(sales))
