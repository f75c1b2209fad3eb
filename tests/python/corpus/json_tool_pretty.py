import json.tool
import sys

data = json.load(open("/work/users.json"))
out = json.dumps(data[:2], indent=2, ensure_ascii=False)
print(out)
print(callable(json.tool.main), sys.getrecursionlimit() > 100)
