import json
import urllib.parse
import urllib.request

API = "http://127.0.0.1:8999"
payload = json.dumps({"task": "summarise", "rows": 9}).encode()
req = urllib.request.Request(f"{API}/api/echo?mode=fast", data=payload, method="POST",
                             headers={"Content-Type": "application/json", "Authorization": "Bearer t0k"})
with urllib.request.urlopen(req) as r:
    echo = json.loads(r.read())
print(echo["method"], echo["query"], echo["content_type"], echo["authorization"])
print(json.loads(echo["body"]))
form = urllib.parse.urlencode({"q": "west sales", "n": 3}).encode()
print(json.load(urllib.request.urlopen(f"{API}/api/echo", data=form))["body"])
