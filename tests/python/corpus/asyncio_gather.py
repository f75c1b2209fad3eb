import asyncio


async def job(name, delay):
    await asyncio.sleep(delay)
    return f"{name} after {delay}"


async def main():
    results = await asyncio.gather(job("a", 0.02), job("b", 0.01), job("c", 0.0))
    print(results)
    q = asyncio.Queue()
    for i in range(3):
        await q.put(i)
    print([await q.get() for _ in range(3)])
    try:
        await asyncio.wait_for(asyncio.sleep(1), timeout=0.01)
    except TimeoutError:
        print("timed out")


asyncio.run(main())
