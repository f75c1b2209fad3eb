import getpass
import os
from pathlib import Path

user = getpass.getuser()
print(type(user).__name__, len(user) > 0)
home = Path.home()
print(home.is_absolute(), os.path.expanduser("~") == str(home))
print(isinstance(os.cpu_count(), int), os.cpu_count() >= 1)
print(os.getcwd().startswith("/"))
