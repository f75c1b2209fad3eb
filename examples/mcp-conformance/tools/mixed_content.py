import base64
import json

image = base64.b64encode(open("/data/pixel.png", "rb").read()).decode()
resource = {
    "uri": "test://mixed-content-resource",
    "mimeType": "application/json",
    "text": json.dumps({"test": "data", "value": 123}),
}
print(json.dumps([
    {"type": "text", "text": "Multiple content types test:"},
    {"type": "image", "data": image, "mimeType": "image/png"},
    {"type": "resource", "resource": resource},
]))
