import sys

sys.exit("This tool intentionally returns an error for testing")
