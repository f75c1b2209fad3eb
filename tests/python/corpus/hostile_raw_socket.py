# sbx-corpus: hostile
import socket

for target in (("127.0.0.1", 8999), ("127.0.0.1", 8998), ("example.com", 443)):
    try:
        socket.create_connection(target, timeout=2)
        print("CONNECTED", target)
    except PermissionError as e:
        print("blocked", target[1], "egress_denied" in str(e))
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", 8998))
    print("CONNECTED raw")
except PermissionError as e:
    print("blocked raw", "egress" in str(e))
try:
    socket.getaddrinfo("example.com", 80)
    print("RESOLVED")
except socket.gaierror:
    print("blocked lookup")
