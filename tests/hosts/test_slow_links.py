"""Turns under load over a slow, lossy link between the app hosts and the database.

200 ms of added round-trip time (the lag relay, tests/hosts/lag.py) and 5 % of the
packets dropped both ways (nftables) between each app host and PostgreSQL, while eight
turns run at once on the two hosts: every turn completes (no heartbeat taken for death,
no lease lost), and the usual invariants hold.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from contextlib import AsyncExitStack

from tests.hosts.turns import Deployment, report

TURNS = 8
DELAY_MS = 200
LOSS_PERCENT = 5


async def test_turns_under_load_over_a_slow_lossy_link_to_postgresql(healed: Deployment) -> None:
    user = await healed.user()
    for host in healed.hosts:
        host.delay(DELAY_MS)
        healed.network.lossy(host.name, "data", LOSS_PERCENT)
    started = time.monotonic()
    posted_on = [healed.hosts[index % 2] for index in range(TURNS)]
    turns = await asyncio.gather(
        *(healed.start_turn(user, host, f"echo turn {i}") for i, host in enumerate(posted_on))
    )
    async with AsyncExitStack() as stack:
        phones = [
            await stack.enter_async_context(healed.phone(turn, user, host))
            for turn, host in zip(turns, posted_on, strict=True)
        ]
        settled = await asyncio.gather(
            *(
                healed.settle(turn, user, phone, host, timeout=120)
                for turn, phone, host in zip(turns, phones, posted_on, strict=True)
            )
        )
        elapsed = time.monotonic() - started
        for turn, phone in zip(turns, phones, strict=True):
            await healed.assert_clean(turn, phone)
    for turn in turns:
        assert await healed.run_status(turn) == ("completed", None)
    report(
        f"{TURNS} turns, {DELAY_MS} ms + {LOSS_PERCENT} % loss to PostgreSQL",
        healed.transport,
        elapsed,
        f"all settled; per turn median {statistics.median(settled):.1f} s",
    )
