"""A TCP relay that delays what it carries: the link delay `tc netem` would give, on a
kernel without netem (tests/hosts/network.py).

    python tests/hosts/lag.py LISTEN_PORT TARGET_HOST TARGET_PORT

It listens on 127.0.0.1 of the namespace it runs in (an app host's) and relays every
connection to the target (the data host's PostgreSQL). A line `MS` on stdin sets the
added round-trip time: each chunk is held MS/2 in each direction, in order. 0 (the
start) relays at once. Packet loss is not its business: nftables drops real packets.
Standard library only, so it starts in a few milliseconds.
"""

from __future__ import annotations

import asyncio
import sys

delay = 0.0  # seconds each way


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction; chunks leave in order, each `delay` after it arrived."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((loop.time() + delay, data))
    except ConnectionError:
        pass
    queue.put_nowait((0.0, b""))
    try:
        await sender
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _relay(host: str, port: int, inbound: asyncio.StreamReader, out: asyncio.StreamWriter):
    try:
        upstream, upstream_writer = await asyncio.open_connection(host, port)
    except OSError:
        out.close()
        return
    await asyncio.gather(_pump(inbound, upstream_writer), _pump(upstream, out))


async def _control() -> None:
    global delay
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        delay = float(line) / 2000


async def main(listen: int, host: str, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: _relay(host, port, r, w), "127.0.0.1", listen)
    print("ready", flush=True)
    async with server:
        await _control()  # stdin closed: the test is over


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
