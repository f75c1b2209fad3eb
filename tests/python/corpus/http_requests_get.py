import requests

API = "http://127.0.0.1:8999"
r = requests.get(f"{API}/api/items", params={"limit": 3}, timeout=10)
r.raise_for_status()
print(r.status_code, r.headers["content-type"], r.ok)
items = r.json()["items"]
print(sorted(i["name"] for i in items if "a" in i["tags"]))
missing = requests.get(f"{API}/api/nope")
print(missing.status_code, missing.json()["error"])
try:
    missing.raise_for_status()
except requests.HTTPError as e:
    print("HTTPError", e.response.status_code)
