# `llm` is a client tool: the client's model answers (sampling).
import json
import sys

import sbx

args = json.load(sys.stdin)
answer = sbx.call_tool("llm", {"prompt": args["prompt"], "max_tokens": 100})
print(f"LLM response: {answer}", end="")
