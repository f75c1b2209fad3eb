import csv
import sqlite3

db = sqlite3.connect("/work/out/sales.db")
db.execute("create table sales (date text, region text, product text, units int, price real)")
with open("/work/sales.csv") as f:
    rows = [(r["date"], r["region"], r["product"], int(r["units"]), float(r["price"])) for r in csv.DictReader(f)]
db.executemany("insert into sales values (?, ?, ?, ?, ?)", rows)
db.commit()
q = "select region, sum(units * price) as revenue from sales group by region order by revenue desc"
for region, revenue in db.execute(q):
    print(region, round(revenue, 2))
print(db.execute("select count(*), max(price) from sales").fetchone())
db.close()
