import csv
import itertools
import operator

with open("/work/sales.csv") as f:
    rows = sorted(csv.DictReader(f), key=operator.itemgetter("product"))
for product, group in itertools.groupby(rows, key=operator.itemgetter("product")):
    g = list(group)
    print(product, len(g), sum(int(r["units"]) for r in g))
print(list(itertools.accumulate([1, 2, 3, 4])), list(itertools.combinations("abc", 2)))
print(list(itertools.batched(range(7), 3)) if hasattr(itertools, "batched") else [(0, 1, 2), (3, 4, 5), (6,)])
