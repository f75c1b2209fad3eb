"""Validate manifests against CustomResourceDefinitions' OpenAPI v3 schemas,
strictly (a field the schema does not name is an error, as
`kubectl apply --validate=strict` makes it), and check that the
agent-sandbox template is the Deployment's pod and the NetworkPolicy's rules.

    crd_validate.py CRD_DIR DEPLOY_DIR MANIFEST...

Prints one line per resource ("passed" or its errors); exits 1 on any error.
Runs in the tests' kubernetes-validate venv (PyYAML and jsonschema).
"""

import glob
import os
import sys

import jsonschema
import yaml


def strict(schema):
    """The schema with unknown fields refused wherever it lists fields."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def schemas(crd_dir):
    found = {}
    for path in sorted(glob.glob(os.path.join(crd_dir, "*.yaml"))):
        crd = yaml.safe_load(open(path))
        spec = crd["spec"]
        for version in spec["versions"]:
            key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
            found[key] = strict(version["schema"]["openAPIV3Schema"])
    return found


def main():
    crd_dir, deploy_dir, *files = sys.argv[1:]
    known = schemas(crd_dir)
    failed = False
    docs = {}
    for path in files:
        for doc in yaml.safe_load_all(open(path)):
            key = (doc.get("apiVersion"), doc.get("kind"))
            name = f"{os.path.basename(path)} {key[1]}/{doc['metadata']['name']}"
            if key not in known:
                print(f"FAILED {name}: no CRD for {key}")
                failed = True
                continue
            errors = sorted(
                jsonschema.Draft4Validator(known[key]).iter_errors(doc), key=lambda e: list(e.path)
            )
            for e in errors[:5]:
                print(f"FAILED {name}: at {'/'.join(map(str, e.path))}: {e.message[:200]}")
            failed |= bool(errors)
            if not errors:
                print(f"passed {name}")
            docs[key[1]] = doc
    template = docs.get("SandboxTemplate")
    if template is not None:
        deployment = yaml.safe_load(open(os.path.join(deploy_dir, "kubernetes/deployment.yaml")))
        policy = yaml.safe_load(open(os.path.join(deploy_dir, "kubernetes/networkpolicy.yaml")))
        pairs = [
            ("the pod", template["spec"]["podTemplate"]["spec"], deployment["spec"]["template"]["spec"]),
            ("egress", template["spec"]["networkPolicy"]["egress"], policy["spec"]["egress"]),
            ("ingress", template["spec"]["networkPolicy"]["ingress"], policy["spec"]["ingress"]),
        ]
        for what, got, want in pairs:
            if got != want:
                print(f"FAILED the SandboxTemplate's {what} is not deploy/kubernetes'")
                failed = True
    sys.exit(1 if failed else 0)


main()
