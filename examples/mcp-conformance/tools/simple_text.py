print("This is a simple text response for testing.", end="")
