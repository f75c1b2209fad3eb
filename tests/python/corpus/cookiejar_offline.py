import http.cookiejar
import urllib.request

API = "http://127.0.0.1:8999"
jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
print(opener.open(f"{API}/api/cookie").read().decode())
print([(c.name, c.value) for c in jar])
print(opener.open(f"{API}/api/whoami").read().decode())
