"""Time zones for zoneinfo without the host: the IANA database of the
bundled tzdata package (host/runners/python/requirements.txt) is read
into memory while the runner is built, so it lives in the snapshot, and
zoneinfo is served from there. zoneinfo's own search of the TZPATH folders
is switched off: each probe would be a denied, audited file operation on
the host (recorded as the script's doing), and the host's database is not
the guest's business."""

import io
import zoneinfo
import zoneinfo._common
import zoneinfo._tzpath

# key ("Europe/Paris") -> the zone's TZif bytes
ZONES = {}


def _read_bundle():
    try:
        import tzdata  # noqa: F401 - its folder is the database
    except ImportError:
        return
    import importlib.resources

    stack = [(importlib.resources.files("tzdata") / "zoneinfo", "")]
    while stack:
        folder, prefix = stack.pop()
        for entry in folder.iterdir():
            key = prefix + entry.name
            if entry.is_dir():
                stack.append((entry, key + "/"))
                continue
            data = entry.read_bytes()
            if data.startswith(b"TZif"):
                ZONES[key] = data


def _load_tzdata(key):
    try:
        return io.BytesIO(ZONES[key])
    except KeyError:
        raise zoneinfo.ZoneInfoNotFoundError(f"No time zone found with key {key}") from None


def _available_timezones():
    return set(ZONES)


def install():
    _read_bundle()
    zoneinfo.reset_tzpath(to=())
    zoneinfo._common.load_tzdata = _load_tzdata
    zoneinfo._tzpath.available_timezones = _available_timezones
    zoneinfo.available_timezones = _available_timezones
