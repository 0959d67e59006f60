"""The harness itself: a turn on two hosts, and a cut that really cuts."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.hosts.turns import Deployment, report


async def test_a_turn_on_one_host_reaches_a_phone_on_the_other(healed: Deployment) -> None:
    app1, app2 = healed.host("app1"), healed.host("app2")
    user = await healed.user()
    turn = await healed.start_turn(user, app1, "echo hi")
    async with healed.phone(turn, user, app2) as phone:
        seconds = await healed.settle(turn, user, phone, app1)
        await healed.assert_clean(turn, phone)
    assert await healed.run_status(turn) == ("completed", None)
    report("no fault", healed.transport, seconds)


async def test_a_cut_is_silent_and_healing_restores_the_link(healed: Deployment) -> None:
    app1 = healed.host("app1")
    healed.network.cut("app1", "clients")
    async with httpx.AsyncClient(base_url=app1.base_url, timeout=1) as http:
        with pytest.raises(httpx.ConnectTimeout):  # dropped, not refused
            await http.get("/api/health")
        healed.network.heal("app1", "clients")
        await asyncio.sleep(0)  # nftables applied synchronously: no wait needed
        assert (await http.get("/api/health")).status_code == 200
