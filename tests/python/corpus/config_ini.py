import configparser

c = configparser.ConfigParser()
c.read("/work/settings.ini")
print(c.sections())
print(c["server"]["host"], c.getint("server", "port"), c.getboolean("server", "debug"))
print(c.getfloat("limits", "timeout") * 2, c.get("limits", "missing", fallback="none"))
c["server"]["port"] = "9090"
with open("/work/out/settings.ini", "w") as f:
    c.write(f)
