import json
import urllib.request

API = "http://127.0.0.1:8999"
with urllib.request.urlopen(f"{API}/api/items", timeout=10) as r:
    print(r.status, r.headers["Content-Type"])
    items = json.load(r)["items"]
total = sum(i["price"] for i in items)
print([i["name"] for i in items], total)
with open("/work/out/items.json", "w") as f:
    json.dump(items, f)
