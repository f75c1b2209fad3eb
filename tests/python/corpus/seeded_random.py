import random

rng = random.Random(42)
print([rng.randint(1, 100) for _ in range(5)])
print(rng.choice(["north", "south", "east", "west"]), round(rng.random(), 6))
deck = list(range(10))
rng.shuffle(deck)
print(deck, rng.sample(range(100), 3))
