# Read through the gate like any guest file; printed as MCP content blocks.
import base64
import json

data = base64.b64encode(open("/data/pixel.png", "rb").read()).decode()
print(json.dumps([{"type": "image", "data": data, "mimeType": "image/png"}]))
