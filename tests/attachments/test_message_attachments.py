"""A message sends uploads: each once, only the sender's, all or nothing."""

from __future__ import annotations

from uuid import uuid4

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ThreadMessage
from tests.api.support import assert_problem, create_thread, post_message
from tests.attachments.support import pdf, photo, upload
from tests.conftest import ApiUser


async def _uploaded(files: httpx.AsyncClient, user: ApiUser, count: int = 1) -> list[dict]:
    return [(await upload(files, user, photo("HEIF"))).json() for _ in range(count)]


async def test_a_message_carries_its_attachments_in_every_read(
    files: httpx.AsyncClient, ann: ApiUser
) -> None:
    thread = await create_thread(files, ann)
    image = (await _uploaded(files, ann))[0]
    document = (await upload(files, ann, pdf(), filename="bill.pdf")).json()
    response = await post_message(
        files, ann, thread["id"], "what is this?", attachment_ids=[image["id"], document["id"]]
    )
    assert response.status_code == 202, response.text
    message = response.json()["message"]
    assert message["attachments"] == [image, document]
    page = await files.get(f"/api/threads/{thread['id']}/messages", headers=ann.headers)
    assert page.json()["items"][0]["attachments"] == [image, document]
    one = await files.get(
        f"/api/threads/{thread['id']}/messages/{message['id']}", headers=ann.headers
    )
    assert one.json()["attachments"] == [image, document]
    plain = await post_message(files, ann, thread["id"], "and no photo")
    assert "attachments" not in plain.json()["message"]  # absent when none


async def test_ids_that_are_not_yours_unknown_or_sent_are_refused_whole(
    files: httpx.AsyncClient, ann: ApiUser, ben: ApiUser, db: AsyncSession
) -> None:
    thread = await create_thread(files, ann)
    mine = (await _uploaded(files, ann))[0]["id"]
    theirs = (await _uploaded(files, ben))[0]["id"]
    for ids, status in (
        ([mine, theirs], 404),  # another user's id: as if it did not exist
        ([mine, str(uuid4())], 404),
        ([mine, mine], 400),
        ([str(uuid4())] * 10_000, 413),  # the body is past its limit before anything
        ([str(uuid4()) for _ in range(11)], 400),
    ):
        response = await post_message(files, ann, thread["id"], "look", attachment_ids=ids)
        assert_problem(response, status)
    # nothing of those was stored: no message, and `mine` can still be sent once
    assert await db.scalar(select(func.count()).select_from(ThreadMessage)) == 0
    sent = await post_message(files, ann, thread["id"], "look", attachment_ids=[mine])
    assert sent.status_code == 202, sent.text
    again = await post_message(files, ann, thread["id"], "again", attachment_ids=[mine])
    assert_problem(again, 409)
    assert await db.scalar(select(func.count()).select_from(ThreadMessage)) == 1
