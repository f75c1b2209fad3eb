import gzip
import zlib

data = open("/work/notes.txt", "rb").read() * 20
with gzip.open("/work/out/notes.txt.gz", "wb") as f:
    f.write(data)
back = gzip.open("/work/out/notes.txt.gz").read()
print(len(data), back == data, len(zlib.compress(data)) < len(data))
print(zlib.crc32(data), zlib.adler32(data))
