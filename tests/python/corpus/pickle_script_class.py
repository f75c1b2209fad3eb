import pickle
from dataclasses import dataclass


@dataclass
class Checkpoint:
    step: int
    state: dict


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1
        return self


with open("/work/out/checkpoint.pkl", "wb") as f:
    pickle.dump([Checkpoint(3, {"loss": 0.25}), Counter().bump().bump()], f)
with open("/work/out/checkpoint.pkl", "rb") as f:
    cp, counter = pickle.load(f)
print(cp, counter.n, type(counter).__module__)
