import io
import logging
import logging.config

stream = io.StringIO()
logging.config.dictConfig({
    "version": 1,
    "formatters": {"plain": {"format": "[%(levelname)s] %(name)s: %(message)s"}},
    "handlers": {"mem": {"class": "logging.StreamHandler", "stream": stream, "formatter": "plain"}},
    "loggers": {"app": {"handlers": ["mem"], "level": "INFO"}},
})
log = logging.getLogger("app")
log.debug("hidden")
log.info("loaded %d rows", 9)
log.error("bad row %s", {"id": 3})
print(stream.getvalue(), end="")
