"""The phone's flows, run by a client generated from openapi/openapi.json with no
hand-written decoding: a photo sent with a question (upload, post, thumbnail), another
answer (regenerate), a corrected question (edit) and flipping back (switch branch).

The server runs its runner with the offline demo model, so every post is answered."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PIL import Image

from tests.support.generated_client import generated, module_of, served  # noqa: F401
from tests.support.sync_db import empty_tables, seed_user

EMAIL, PASSWORD = "flows@example.com", "flows-password"


@pytest.fixture(scope="module")
def server_url(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    seed_user(database_url, EMAIL, PASSWORD)
    files: Path = tmp_path_factory.mktemp("flows_files")
    try:
        with served(database_url, ATTACHMENTS_DIR=str(files)) as url:
            yield url
    finally:
        empty_tables(database_url)


class Phone:
    """The generated package's operations, signed in."""

    def __init__(self, package: str, base_url: str) -> None:
        self.package = package
        self.models = module_of(package, "models")
        client_mod = module_of(package, "client")
        token_op = self.op("auth.create_token")
        with client_mod.Client(base_url=base_url, raise_on_unexpected_status=True) as anon:
            body = self.models.TokenCreate(email=EMAIL, password=PASSWORD)
            token = token_op.sync(client=anon, body=body)
        self.client = client_mod.AuthenticatedClient(
            base_url=base_url, token=token.access_token, raise_on_unexpected_status=True
        )

    def op(self, path: str) -> ModuleType:
        return module_of(self.package, f"api.{path}")

    def call(self, path: str, *args: Any, **kwargs: Any) -> Any:
        return self.op(path).sync(*args, client=self.client, **kwargs)

    def finished(self, thread_id: Any, run_id: Any, seconds: float = 30) -> Any:
        """The run once it ended (the demo model answers within a moment)."""
        deadline = time.monotonic() + seconds
        while True:
            run = self.call("runs.get_run", thread_id, run_id)
            if run.status.value not in ("queued", "running") or time.monotonic() > deadline:
                return run
            time.sleep(0.1)

    def branch(self, thread_id: Any) -> Any:
        return self.call("messages.list_messages", thread_id)


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (640, 480), (30, 140, 60)).save(out, format="PNG")
    return out.getvalue()


def test_a_photo_then_another_answer_an_edit_and_a_switch(
    generated: str,  # noqa: F811
    server_url: str,
) -> None:
    phone = Phone(generated, server_url)
    models, types = phone.models, module_of(generated, "types")
    with phone.client:
        agent = phone.call("agents.list_agents").items[0]
        thread = phone.call("threads.create_thread", body=models.ThreadCreate(agent_id=agent.id))

        # A photo: uploaded first, then sent by its id with the question.
        picture = types.File(
            payload=io.BytesIO(_png()), file_name="leaf.png", mime_type="image/png"
        )
        upload = phone.call("attachments.upload_attachment", body=models.AttachmentUpload(picture))
        assert isinstance(upload, models.AttachmentRead) and (upload.width, upload.height) == (
            640,
            480,
        )
        question = models.MessageCreate(content="What is this plant?", attachment_ids=[upload.id])
        posted = phone.call("messages.post_message", thread.id, body=question)
        assert phone.finished(thread.id, posted.run.id).status.value == "completed"
        [asked, answer] = [m for m in phone.branch(thread.id).items if m.role.value != "tool"]
        assert [a.id for a in asked.attachments] == [upload.id] and answer.content
        thumbnail = phone.op("attachments.download_attachment_thumbnail").sync_detailed(
            upload.id, client=phone.client
        )
        assert thumbnail.status_code == 200 and thumbnail.content[:2] == b"\xff\xd8"  # JPEG

        # Another answer: a second version of the reply, shown as 2/2.
        again = phone.call(
            "messages.regenerate_reply", thread.id, asked.id, body=models.ReplyRegenerate()
        )
        assert phone.finished(thread.id, again.run.id).status.value == "completed"
        latest = phone.branch(thread.id).items[-1]
        assert (latest.siblings.count, latest.siblings.index) == (2, 1)
        assert answer.id in latest.siblings.ids

        # The question corrected: a new branch from it, answered by a new run.
        edit = models.MessageEdit(content="What is this tree?")
        edited = phone.call("messages.edit_message", thread.id, asked.id, body=edit)
        assert phone.finished(thread.id, edited.run.id).status.value == "completed"
        page = phone.branch(thread.id)
        users = [m for m in page.items if m.role.value == "user"]
        assert [m.content for m in users] == ["What is this tree?"]
        assert (users[0].siblings.count, users[0].siblings.index) == (2, 1)

        # Back to the first version: its branch, with its photo and its latest answer.
        back = phone.call("messages.switch_branch", thread.id, asked.id)
        assert isinstance(back, models.MessagePage)
        shown = [m for m in back.items if m.role.value != "tool"]
        assert [m.content for m in shown if m.role.value == "user"] == ["What is this plant?"]
        assert shown[-1].id == back.current_leaf_id and shown[0].attachments[0].id == upload.id
        assert phone.branch(thread.id).current_leaf_id == back.current_leaf_id
