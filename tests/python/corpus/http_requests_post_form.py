import requests

API = "http://127.0.0.1:8999"
r = requests.post(f"{API}/api/echo", data={"name": "Ada", "role": "admin"})
print(r.json()["content_type"], r.json()["body"])
r = requests.delete(f"{API}/api/echo?id=7")
print(r.json()["method"], r.json()["query"])
files = {"report": ("report.txt", b"total: 42\n", "text/plain")}
body = requests.post(f"{API}/api/echo", files=files).json()["body"]
print("report.txt" in body, "total: 42" in body)
