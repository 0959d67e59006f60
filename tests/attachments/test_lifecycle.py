"""Attachments end with what holds them: a deleted thread, an upload never sent."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.attachments.lifecycle import expire_unsent, orphans
from app.attachments.services import deletions_settled
from app.attachments.storage import LocalStorage
from app.db.models import Attachment, Run
from app.lib.time import utcnow
from tests.api.support import create_thread, post_message
from tests.attachments.support import photo, upload
from tests.conftest import ApiUser
from tests.support.cli import litestar, ok


async def test_deleting_a_thread_deletes_its_attachments_and_their_files(
    files: httpx.AsyncClient, ann: ApiUser, attachments_dir: Path
) -> None:
    thread = await create_thread(files, ann)
    sent = (await upload(files, ann, photo("HEIF"))).json()
    kept = (await upload(files, ann, photo())).json()  # not sent: not the thread's
    await post_message(files, ann, thread["id"], "look", attachment_ids=[sent["id"]])
    assert (attachments_dir / sent["id"] / "file").exists()
    response = await files.delete(f"/api/threads/{thread['id']}", headers=ann.headers)
    assert response.status_code == 204
    await deletions_settled()  # the files go after the commit, off the request
    assert not (attachments_dir / sent["id"]).exists()
    gone = await files.get(f"/api/attachments/{sent['id']}", headers=ann.headers)
    assert gone.status_code == 404
    assert (
        await files.get(f"/api/attachments/{kept['id']}", headers=ann.headers)
    ).status_code == 200
    assert (attachments_dir / kept["id"] / "file").exists()


async def test_deleting_a_message_deletes_its_attachments_and_their_files(
    files: httpx.AsyncClient, ann: ApiUser, db: AsyncSession, attachments_dir: Path
) -> None:
    thread, other = await create_thread(files, ann), await create_thread(files, ann)
    sent = (await upload(files, ann, photo("HEIF"))).json()
    beside = (await upload(files, ann, photo())).json()
    posted = await post_message(files, ann, thread["id"], "look", attachment_ids=[sent["id"]])
    await post_message(files, ann, other["id"], "and this", attachment_ids=[beside["id"]])
    await db.execute(update(Run).values(status="completed"))  # no runner here: done
    await db.commit()

    message_id = posted.json()["message"]["id"]
    url = f"/api/threads/{thread['id']}/messages/{message_id}"
    assert (await files.delete(url, headers=ann.headers)).status_code == 204
    await deletions_settled()
    assert not (attachments_dir / sent["id"]).exists()
    gone = await files.get(f"/api/attachments/{sent['id']}", headers=ann.headers)
    assert gone.status_code == 404
    assert (attachments_dir / beside["id"] / "file").exists()


async def test_uploads_never_sent_expire_and_orphans_are_found(
    files: httpx.AsyncClient,
    ann: ApiUser,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    attachments_dir: Path,
) -> None:
    thread = await create_thread(files, ann)
    old = (await upload(files, ann, photo())).json()
    fresh = (await upload(files, ann, photo())).json()
    sent = (await upload(files, ann, photo())).json()
    await post_message(files, ann, thread["id"], "look", attachment_ids=[sent["id"]])
    day_ago = utcnow() - timedelta(hours=25)
    await db.execute(
        update(Attachment).values(created_at=day_ago).where(Attachment.id != fresh["id"])
    )
    await db.commit()

    storage = LocalStorage(attachments_dir)
    assert await expire_unsent(session_factory, storage, timedelta(hours=24)) == 1
    assert not (attachments_dir / old["id"]).exists()
    for still in (fresh, sent):
        assert (
            await files.get(f"/api/attachments/{still['id']}", headers=ann.headers)
        ).status_code == 200

    stray = attachments_dir / "0190a3c2-0000-7000-8000-000000000001"
    stray.mkdir(exist_ok=True)
    (stray / "file").write_bytes(b"left by a crash")
    found = {str(i) for i in await orphans(session_factory, storage)}
    assert stray.name in found and not found & {fresh["id"], sent["id"]}


def test_the_orphans_command_lists_then_deletes_stray_objects(
    database_url: str, tmp_path: Path
) -> None:
    stray = tmp_path / "0190a3c2-0000-7000-8000-000000000002"
    stray.mkdir()
    (stray / "file").write_bytes(b"left by a crash")
    env = {"ATTACHMENTS_DIR": str(tmp_path), "MCP_DEMO_SERVER": "0"}
    listed = ok(litestar(database_url, "attachments", "orphans", env=env))
    assert f"orphan {stray.name}" in listed and stray.exists()
    deleted = ok(litestar(database_url, "attachments", "orphans", "--delete", env=env))
    assert f"deleted {stray.name}" in deleted and not stray.exists()
