# The URI's variables arrive on stdin as a JSON object; stdout is the text.
import json
import sys

vars = json.load(sys.stdin)
print(json.dumps({"id": vars["id"], "templateTest": True, "data": f"Data for ID: {vars['id']}"}), end="")
