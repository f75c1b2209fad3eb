import json

import sbx

schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}
message = "Test client default value handling - please accept with defaults"
answer = json.loads(sbx.call_tool("ask_user", {"message": message, "schema": schema}))
print(f"Elicitation completed: action={answer['action']}, content={json.dumps(answer['content'])}", end="")
