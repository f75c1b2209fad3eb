import requests

API = "http://127.0.0.1:8999"
with requests.Session() as s:
    s.headers.update({"Authorization": "Bearer abc", "User-Agent": "corpus-agent/1.0"})
    print(s.get(f"{API}/api/cookie").text, dict(s.cookies))
    print(s.get(f"{API}/api/whoami").json())
    echo = s.post(f"{API}/api/echo", json={"rows": [1, 2, 3]}).json()
    print(echo["method"], echo["content_type"], echo["authorization"], echo["body"])
    r = s.get(f"{API}/api/moved")
    print(r.status_code, [h.status_code for h in r.history], r.url.endswith("/api/items"))
