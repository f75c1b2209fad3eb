import json

resource = {
    "uri": "test://embedded-resource",
    "mimeType": "text/plain",
    "text": "This is an embedded resource content.",
}
print(json.dumps([{"type": "resource", "resource": resource}]))
