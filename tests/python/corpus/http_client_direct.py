import http.client
import json

conn = http.client.HTTPConnection("127.0.0.1:8999", timeout=10)
conn.request("GET", "/api/items", headers={"Accept": "application/json"})
resp = conn.getresponse()
print(resp.status, resp.reason, resp.getheader("content-type"))
items = json.loads(resp.read())["items"]
conn.request("PUT", "/api/echo", body=json.dumps(items[0]), headers={"Content-Type": "application/json"})
echo = json.loads(conn.getresponse().read())
print(echo["method"], json.loads(echo["body"])["name"])
conn.close()
