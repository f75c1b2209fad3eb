import json

import sbx

choices = [("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")]
schema = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [{"const": c, "title": t} for c, t in choices],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {"anyOf": [{"const": c, "title": t.replace("Option", "Choice")} for c, t in choices]},
        },
    },
    "required": [],
}
message = "Choose from each kind of list"
answer = json.loads(sbx.call_tool("ask_user", {"message": message, "schema": schema}))
print(f"Elicitation completed: action={answer['action']}, content={json.dumps(answer['content'])}", end="")
