"""A Python client generated from the committed OpenAPI file drives a real server
(tests/support/generated_client.py builds the client and serves the app)."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import pytest

from tests.support.generated_client import generated, module_of, served  # noqa: F401
from tests.support.sync_db import empty_tables, seed_user

EMAIL, PASSWORD = "client@example.com", "client-password"


@pytest.fixture(scope="module")
def server_url(database_url: str) -> Iterator[str]:
    seed_user(database_url, EMAIL, PASSWORD)
    try:
        with served(database_url, RUNNER_ENABLED="0") as url:
            yield url
    finally:
        empty_tables(database_url)


_module = module_of


def test_generated_client_drives_the_api(generated: str, server_url: str) -> None:  # noqa: F811
    client_mod = _module(generated, "client")
    models = _module(generated, "models")
    create_token = _module(generated, "api.auth.create_token")
    get_me = _module(generated, "api.auth.get_me")
    list_agents = _module(generated, "api.agents.list_agents")
    create_thread = _module(generated, "api.threads.create_thread")
    list_threads = _module(generated, "api.threads.list_threads")
    post_message = _module(generated, "api.messages.post_message")
    list_messages = _module(generated, "api.messages.list_messages")
    cancel_run = _module(generated, "api.runs.cancel_run")
    get_thread = _module(generated, "api.threads.get_thread")

    anonymous = client_mod.Client(base_url=server_url, raise_on_unexpected_status=True)
    with anonymous as client:
        token = create_token.sync(
            client=client, body=models.TokenCreate(email=EMAIL, password=PASSWORD)
        )
        assert isinstance(token, models.TokenRead), token
        wrong = create_token.sync_detailed(
            client=client, body=models.TokenCreate(email=EMAIL, password="nope")
        )
        assert wrong.status_code == 401 and isinstance(wrong.parsed, models.ProblemDetail)

    authed = client_mod.AuthenticatedClient(
        base_url=server_url, token=token.access_token, raise_on_unexpected_status=True
    )
    with authed as client:
        me = get_me.sync(client=client)
        assert isinstance(me, models.UserRead) and me.email == EMAIL

        agents = list_agents.sync(client=client)
        agent = agents.items[0]
        thread = create_thread.sync(
            client=client, body=models.ThreadCreate(agent_id=agent.id, title="from the client")
        )
        assert isinstance(thread, models.ThreadRead), thread

        posted = post_message.sync(
            thread.id,
            client=client,
            body=models.MessageCreate(content="hello", client_message_id="gen-1"),
        )
        assert isinstance(posted, models.MessagePosted), posted
        assert posted.run.status.value == "queued"
        repeat = post_message.sync_detailed(
            thread.id,
            client=client,
            body=models.MessageCreate(content="hello", client_message_id="gen-1"),
        )
        assert repeat.status_code == 200 and repeat.parsed.message.id == posted.message.id

        page = list_messages.sync(thread.id, client=client, after_seq=0)
        assert [m.content for m in page.items] == ["hello"] and page.last_seq == 1

        threads = list_threads.sync(client=client, limit=10)
        assert [t.id for t in threads.items] == [thread.id]

        cancelled = cancel_run.sync(thread.id, posted.run.id, client=client)
        assert cancelled.status.value == "cancelled"

        missing = get_thread.sync_detailed(uuid4(), client=client)
        assert missing.status_code == 404
        assert isinstance(missing.parsed, models.ProblemDetail) and missing.parsed.status == 404

        invalid = post_message.sync_detailed(
            thread.id, client=client, body=models.MessageCreate(content="x" * 32_001)
        )
        assert invalid.status_code == 400 and invalid.parsed.errors[0].field == "content"
