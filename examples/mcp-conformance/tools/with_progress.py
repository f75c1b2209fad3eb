# Each stderr line is a progress notification for a client that asked.
import sys
import time

for i, done in enumerate([0, 50, 100]):
    if i:
        time.sleep(0.05)
    print(f"{done}/100", file=sys.stderr, flush=True)
print("Progress test completed", end="")
