import base64
import binascii

raw = open("/work/readings.bin", "rb").read()
b64 = base64.b64encode(raw).decode()
print(b64[:32], len(b64))
print(base64.b64decode(b64) == raw, binascii.hexlify(raw[:8]).decode())
print(base64.urlsafe_b64encode(b"\xff\xfe agent?").decode())
