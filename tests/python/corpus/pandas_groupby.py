# sbx-corpus: data
import pandas as pd

df = pd.read_csv("/work/sales.csv", parse_dates=["date"])
df["revenue"] = df.units * df.price
print(df.groupby("region").revenue.sum().round(2).to_dict())
df.to_csv("/work/out/with_revenue.csv", index=False)
