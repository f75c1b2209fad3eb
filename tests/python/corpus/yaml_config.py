import os

import yaml

CONFIG = "/work/pipeline.yaml"
with open(CONFIG, encoding="utf-8") as f:
    config = yaml.safe_load(f)
here = os.path.dirname(CONFIG)

print(config["name"], "retries", config["retries"])
for source in config["sources"]:
    exists = os.path.exists(os.path.join(here, source["path"]))
    print(f"- {source['name']}: {source['format']} ({'found' if exists else 'missing'})")

config["retries"] += 1
config["notify"]["enabled"] = True
with open("/work/out/pipeline.resolved.yaml", "w", encoding="utf-8") as f:
    yaml.safe_dump(config, f, sort_keys=True)
print(yaml.safe_dump({"formats": config["output"]["formats"]}, default_flow_style=True).strip())
