import json
import urllib.error
import urllib.request

API = "http://127.0.0.1:8999"
try:
    urllib.request.urlopen(f"{API}/api/nothing-here")
except urllib.error.HTTPError as e:
    print("HTTPError", e.code, e.reason, json.loads(e.read())["error"])
with urllib.request.urlopen(f"{API}/api/moved") as r:
    print("after redirect:", r.status, len(json.load(r)["items"]))
