import tomllib

with open("/work/project.toml", "rb") as f:
    doc = tomllib.load(f)
print(doc["project"]["name"], doc["project"]["version"])
print(doc["project"]["dependencies"], doc["tool"]["lint"])
