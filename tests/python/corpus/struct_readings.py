import struct

data = open("/work/readings.bin", "rb").read()
size = struct.calcsize("<Id")
readings = [struct.unpack_from("<Id", data, off) for off in range(0, len(data), size)]
print(len(readings), readings[:3], max(v for _, v in readings))
with open("/work/out/doubled.bin", "wb") as f:
    for i, v in readings:
        f.write(struct.pack(">Id", i, v * 2))
print(struct.unpack(">Id", open("/work/out/doubled.bin", "rb").read(12)))
