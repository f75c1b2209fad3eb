import heapq
import json

users = json.load(open("/work/users.json"))
print([u["name"] for u in heapq.nlargest(2, users, key=lambda u: u["age"])])
h = []
for task, prio in [("write", 3), ("read", 1), ("send", 2)]:
    heapq.heappush(h, (prio, task))
print([heapq.heappop(h)[1] for _ in range(len(h))])
