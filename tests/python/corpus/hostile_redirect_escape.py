# sbx-corpus: hostile
import urllib.error
import urllib.request

import requests

# A granted server that redirects to one that is not granted.
url = "http://127.0.0.1:8999/redirect-to/127.0.0.1:8998/collect"
try:
    print("FOLLOWED", urllib.request.urlopen(url).status)
except urllib.error.URLError as e:
    print("blocked urllib", "egress_denied" in str(e.reason))
try:
    print("FOLLOWED", requests.get(url).status_code)
except requests.exceptions.ConnectionError as e:
    print("blocked requests", "egress_denied" in str(e))
