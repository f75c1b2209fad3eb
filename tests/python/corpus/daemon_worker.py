import queue
import threading

q = queue.Queue()
done = []


def worker():
    while True:
        line = q.get()
        done.append(line.upper())
        q.task_done()


threading.Thread(target=worker, daemon=True).start()
for line in open("/work/notes.txt"):
    q.put(line.strip())
q.join()
print(len(done), done[0][:20])
