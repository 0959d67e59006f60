"""Redis down for a few seconds: sockets that stayed connected still receive every change.

Two server processes share the database and a Redis of the test's own. Changes written
while Redis is down are lost to pub/sub; the database has them, and a socket that stayed
connected must get them once Redis is back, without waiting for the thread's next event.
"""

from __future__ import annotations

import httpx

from tests.conftest import ApiUser
from tests.realtime.conftest import new_thread
from tests.realtime.support import RedisServer, WsClient, two_processes


async def test_a_turn_finished_during_an_outage_reaches_a_socket_that_stayed_connected(
    process_env: dict[str, str], own_redis: RedisServer, client: httpx.AsyncClient, alice: ApiUser
) -> None:
    env = {**process_env, "REDIS_URL": own_redis.url}
    async with two_processes(env) as processes:
        http = processes.http
        thread_id = await new_thread(http, alice)
        async with WsClient.connect(processes.ws, alice.token) as ws:
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed", last_seq=0)

            await own_redis.stop()
            # A whole turn while Redis is down: the user's message, its run, and the end
            # of the run (written through the other process).
            posted = await http.post(
                f"/api/threads/{thread_id}/messages",
                json={"content": "during the outage"},
                headers=alice.headers,
            )
            assert posted.status_code == 202, posted.text
            run_id = posted.json()["run"]["id"]
            cancelled = await http.post(
                f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=alice.headers
            )
            assert cancelled.status_code in (200, 202), cancelled.text
            await own_redis.start()

            # No further writes: the socket catches up from the database by itself.
            message = await ws.wait_type("message", seq=1, within=20)
            assert message["message"] == posted.json()["message"]
            run = await ws.wait_for(
                lambda f: f["type"] == "run" and f["run"]["status"] == "cancelled", within=20
            )
            assert run["run"]["id"] == run_id
            assert ws.close_code is None
