# Each stderr line is a log message for a client that set a level.
import sys
import time

for i, step in enumerate(["Tool execution started", "Tool processing data", "Tool execution completed"]):
    if i:
        time.sleep(0.05)
    print(step, file=sys.stderr, flush=True)
print("Logging test completed", end="")
