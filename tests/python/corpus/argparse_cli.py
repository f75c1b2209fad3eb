import argparse
import sys

parser = argparse.ArgumentParser(description="summarise a CSV")
parser.add_argument("path", nargs="?", default="/work/sales.csv")
parser.add_argument("--column", default="units")
parser.add_argument("--top", type=int, default=3)
args = parser.parse_args()
print("argv0 is a str:", isinstance(sys.argv[0], str), "args:", sys.argv[1:])
import csv
with open(args.path) as f:
    values = sorted((int(r[args.column]) for r in csv.DictReader(f)), reverse=True)
print(args.column, values[: args.top])
