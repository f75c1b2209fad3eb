# sbx-corpus: hostile
# Bodies past the broker's 10 MiB limit, through each HTTP client, to the
# granted origin: each is refused before any byte leaves.
import http.client
import urllib.error
import urllib.request

import requests

URL = "http://127.0.0.1:8999/api/echo"
body = b"x" * (11 << 20)
try:
    urllib.request.urlopen(URL, data=body, timeout=5)
    print("SENT urllib")
except urllib.error.URLError as e:
    print("blocked urllib", "invalid_request" in str(e.reason))
try:
    requests.post(URL, data=body, timeout=5)
    print("SENT requests")
except requests.exceptions.ConnectionError as e:
    print("blocked requests", "invalid_request" in str(e))
try:
    c = http.client.HTTPConnection("127.0.0.1:8999", timeout=5)
    c.request("POST", "/api/echo", body=body)
    c.getresponse()
    print("SENT http.client")
except OSError as e:
    print("blocked http.client", "invalid_request" in str(e))
