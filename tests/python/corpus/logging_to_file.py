import logging
import logging.handlers

log = logging.getLogger("agent")
log.setLevel(logging.DEBUG)
handler = logging.handlers.RotatingFileHandler("/work/out/agent.log", maxBytes=200, backupCount=2)
handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
log.addHandler(handler)
for i in range(12):
    log.info("step %d of 12", i)
log.warning("done")
handler.close()
import os
print(sorted(os.listdir("/work/out")))
print(open("/work/out/agent.log").read(), end="")
