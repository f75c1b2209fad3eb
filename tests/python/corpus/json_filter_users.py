import json

with open("/work/users.json") as f:
    users = json.load(f)
active = sorted((u for u in users if u["active"]), key=lambda u: -u["age"])
for u in active:
    print(u["name"], u["age"], ",".join(u["tags"]))
devs = [u["email"] for u in users if "dev" in u["tags"]]
with open("/work/out/devs.json", "w") as f:
    json.dump({"devs": devs, "count": len(devs)}, f)
print("devs:", devs)
