import base64
import json

data = base64.b64encode(open("/data/tone.wav", "rb").read()).decode()
print(json.dumps([{"type": "audio", "data": data, "mimeType": "audio/wav"}]))
