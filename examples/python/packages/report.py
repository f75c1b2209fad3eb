"""A data agent's report with two pure-Python packages from PyPI bundled
into the runner: dateutil parses loose dates and does calendar arithmetic,
tabulate prints the table."""

from dateutil import parser
from dateutil.relativedelta import relativedelta
from tabulate import tabulate

orders = [("north", "2024-01-31", 120), ("south", "March 3 2024", 80), ("east", "2024/02/29", 45)]
rows = []
for region, when, amount in orders:
    day = parser.parse(when).date()
    rows.append((region, day.isoformat(), (day + relativedelta(months=1)).isoformat(), amount))
print(tabulate(rows, headers=["region", "ordered", "due", "amount"]))
