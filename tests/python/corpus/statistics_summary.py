import csv
import statistics

with open("/work/sales.csv") as f:
    units = [int(r["units"]) for r in csv.DictReader(f)]
print("n", len(units))
print("mean", round(statistics.mean(units), 3))
print("median", statistics.median(units))
print("stdev", round(statistics.stdev(units), 3))
print("quantiles", statistics.quantiles(units, n=4))
print("mode", statistics.mode(units))
