from enum import Enum, auto
from typing import NamedTuple


class Level(Enum):
    LOW = auto()
    MID = auto()
    HIGH = auto()


class Reading(NamedTuple):
    sensor: str
    value: float

    def level(self) -> Level:
        return Level.HIGH if self.value > 8 else Level.MID if self.value > 3 else Level.LOW


rs = [Reading("a", 1.5), Reading("b", 4.0), Reading("c", 9.25)]
for r in rs:
    print(r.sensor, r.value, r.level().name, r.level().value)
print([l.name for l in Level], Reading._fields)
