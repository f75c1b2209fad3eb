import json
import pprint

users = json.load(open("/work/users.json"))
pprint.pprint({u["name"]: {"tags": u["tags"], "age": u["age"]} for u in users}, width=60)
print(json.dumps(users[0], sort_keys=True, indent=1))
