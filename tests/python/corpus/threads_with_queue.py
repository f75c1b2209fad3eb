import queue
import threading

tasks = queue.Queue()
results = []
lock = threading.Lock()


def worker():
    while True:
        item = tasks.get()
        if item is None:
            tasks.task_done()
            break
        with lock:
            results.append((item, item ** 2))
        tasks.task_done()


threads = [threading.Thread(target=worker) for _ in range(3)]
for t in threads:
    t.start()
for i in range(10):
    tasks.put(i)
for _ in threads:
    tasks.put(None)
tasks.join()
for t in threads:
    t.join()
print(sorted(results))
print(all(not t.is_alive() for t in threads))
