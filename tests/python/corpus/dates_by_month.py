import csv
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

months = {}
with open("/work/sales.csv") as f:
    for r in csv.DictReader(f):
        d = datetime.strptime(r["date"], "%Y-%m-%d")
        months.setdefault(d.strftime("%B"), []).append(d.day)
for month, days in months.items():
    print(month, sorted(days))
t = datetime(2024, 3, 30, 23, 30, tzinfo=ZoneInfo("UTC"))
print(t.astimezone(ZoneInfo("Asia/Tokyo")).isoformat())
print((t + timedelta(days=2)).date(), t.isocalendar().week)
