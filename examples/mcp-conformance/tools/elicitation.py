# `ask_user` is a client tool: the client's user answers a form (elicitation).
import json
import sys

import sbx

args = json.load(sys.stdin)
schema = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
answer = json.loads(sbx.call_tool("ask_user", {"message": args["message"], "schema": schema}))
print(f"User response: action={answer['action']}, content={json.dumps(answer['content'])}", end="")
