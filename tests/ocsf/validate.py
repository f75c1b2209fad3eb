"""Validate OCSF events (JSON lines on stdin, or files given) against the
OCSF schema of their `metadata.version`, each against its class with the
profiles it names. A sealed log's seal lines (not events) are skipped. Prints one line per invalid event and a summary; exits 1
if any event is invalid, 2 if there were none."""
import json
import sys

from jsonschema import Draft202012Validator
from ocsf_json_schema import OcsfJsonSchemaEmbedded, get_ocsf_schema

schemas = {}
validators = {}
seen = {}
bad = 0
lines = []
for path in sys.argv[1:] or ["-"]:
    f = sys.stdin if path == "-" else open(path)
    lines += [line for line in f if line.strip()]
lines = [line for line in lines if "seal" not in json.loads(line)]
for n, line in enumerate(lines, 1):
    event = json.loads(line)
    version = event["metadata"]["version"]
    if version not in schemas:
        schemas[version] = OcsfJsonSchemaEmbedded(get_ocsf_schema(version=version))
    schema = schemas[version]
    uid = event["class_uid"]
    profiles = tuple(sorted(event["metadata"].get("profiles", [])))
    key = (version, uid, profiles)
    if key not in validators:
        name = schema.lookup_class_name_from_uid(class_uid=uid)
        validators[key] = Draft202012Validator(
            schema.get_class_schema(class_name=name, profiles=list(profiles))
        )
    errors = sorted(validators[key].iter_errors(event), key=lambda e: list(e.path))
    seen[uid] = seen.get(uid, 0) + 1
    for e in errors:
        bad += 1
        print(f"event {n} (class {uid}): {'/'.join(map(str, e.path))}: {e.message}")
print(f"{len(lines)} events, {bad} errors, classes {json.dumps(seen, sort_keys=True)}")
sys.exit(1 if bad else (2 if not lines else 0))
