"""Two server processes sharing the database and Redis: a client on one sees the other's writes."""

from __future__ import annotations

import httpx

from tests.conftest import ApiUser
from tests.realtime.conftest import new_thread
from tests.realtime.support import WsClient, two_processes


async def test_a_client_on_one_process_sees_a_post_on_the_other(
    process_env: dict[str, str], client: httpx.AsyncClient, alice: ApiUser
) -> None:
    async with two_processes(process_env) as processes:
        http = processes.http
        thread_id = await new_thread(http, alice)
        async with WsClient.connect(processes.ws, alice.token) as ws:
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed", last_seq=0)
            posted = await http.post(
                f"/api/threads/{thread_id}/messages",
                json={"content": "from the other process"},
                headers=alice.headers,
            )
            assert posted.status_code == 202, posted.text
            body = posted.json()
            message = await ws.wait_type("message", seq=1)
            assert message["message"] == body["message"]
            run = await ws.wait_type("run")
            assert run["run"]["id"] == body["run"]["id"]
            assert run["run"]["status"] == "queued"

            cancelled = await http.post(
                f"/api/threads/{thread_id}/runs/{body['run']['id']}/cancel", headers=alice.headers
            )
            assert cancelled.status_code in (200, 202), cancelled.text
            assert (await ws.wait_type("run", within=15, run=cancelled.json()))["run"][
                "status"
            ] == ("cancelled")
