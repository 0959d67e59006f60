"""What the model receives of a message's photos and files (the fake server records it)."""

from __future__ import annotations

import base64
from pathlib import Path
from uuid import uuid4

from app.orchestrator.door.images import image_reference
from app.orchestrator.door.llm import fit_to_context
from tests.attachments.s3_server import s3_server, seeing_model_storage  # noqa: F401
from tests.attachments.support import GPS_IFD, opened, pdf, photo, upload
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Text

BOTH_DOORS = True  # our OpenAI-wire client and litellm both carry the image


async def _send(api: OrchestratorApi, content: str, data: bytes, filename: str, **kw) -> dict:
    attachment = (await upload(api.client, api.user, data, filename=filename)).json()
    thread_id, run = await api.turn(content, attachment_ids=[attachment["id"]], **kw)
    assert run["status"] == "completed", run
    return {"thread_id": thread_id, "attachment": attachment}


def _image_parts(message: dict) -> list[dict]:
    content = message["content"]
    return [] if isinstance(content, str) else [p for p in content if p["type"] == "image_url"]


async def test_an_iphone_heic_reaches_the_model_as_a_jpeg_without_its_location(
    api: OrchestratorApi,
) -> None:
    api.llm.script(Text("A fern."), Text("Yes, a fern."))
    sent = await _send(api, "what plant is this?", photo("HEIF", (120, 80), 6), "IMG_0042.HEIC")
    user = api.llm.requests[0]["messages"][-1]
    assert user["role"] == "user"
    assert user["content"][0] == {"type": "text", "text": "what plant is this?"}
    [part] = _image_parts(user)
    url = part["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    seen = opened(base64.b64decode(url.split(",", 1)[1]))
    assert seen.format == "JPEG" and seen.size == (80, 120)  # upright
    assert not seen.getexif() and not seen.getexif().get_ifd(GPS_IFD)
    assert "stand_in" not in part  # nothing of ours reaches the provider

    # a later turn replays the photo with the history
    response = await api.post(sent["thread_id"], "are you sure?")
    await api.wait_run(sent["thread_id"], response.json()["run"]["id"])
    later = api.llm.requests[1]["messages"]
    assert [len(_image_parts(m)) for m in later if m["role"] == "user"] == [1, 0]


async def test_a_photo_sent_with_no_text_reaches_the_model_alone(api: OrchestratorApi) -> None:
    api.llm.script(Text("A fern."))
    sent = await _send(api, "", photo("HEIF", (120, 80)), "IMG_0043.HEIC")
    user = api.llm.requests[0]["messages"][-1]
    assert [p["type"] for p in user["content"]] == ["image_url"]  # no empty text part
    [message] = [m for m in await api.messages(sent["thread_id"]) if m["role"] == "user"]
    [shown] = message["attachments"]
    assert message["content"] == "" and shown == {**sent["attachment"], "model_saw": True}
    empty = await api.client.post(
        f"/api/threads/{sent['thread_id']}/messages", json={"content": ""},
        headers=api.user.headers,
    )  # fmt: skip
    assert empty.status_code == 400 and "attachment_ids" in empty.text


async def test_a_model_that_cannot_see_gets_a_line_instead_of_the_image(
    api: OrchestratorApi,
) -> None:
    agent = await api.add_agent(name="blind", model="openai/text-only-model", agent_type="tester")
    api.llm.script(Text("I cannot see it."))
    attachment = (await upload(api.client, api.user, photo(), filename="plant.jpg")).json()
    thread_id = await api.new_thread(agent.id)
    _, run = await api.turn("what is it?", thread_id, attachment_ids=[attachment["id"]])
    assert run["status"] == "completed", run
    user = api.llm.requests[0]["messages"][-1]
    assert not _image_parts(user)
    assert "plant.jpg" in user["content"][1]["text"]
    assert "cannot see images" in user["content"][1]["text"]
    # The user is told, in the message: its photo is marked unseen (live, and on a read).
    [asked] = [m for m in await api.messages(thread_id) if m["role"] == "user"]
    assert [a["model_saw"] for a in asked["attachments"]] == [False]
    await api.frames.wait_for(lambda f: _photo_marked(f, asked["id"], False))

    # Another answer from a model that sees images: now it has been seen.
    api.llm.script(Text("A fern."))
    seeing = await api.add_agent(name="seeing", model="openai/fake-model", agent_type="tester")
    url = f"/api/threads/{thread_id}/messages/{asked['id']}/regenerate"
    again = await api.client.post(url, json={"agent_id": str(seeing.id)}, headers=api.headers)
    assert again.status_code == 202, again.text
    assert (await api.wait_run(thread_id, again.json()["run"]["id"]))["status"] == "completed"
    assert len(_image_parts(api.llm.requests[1]["messages"][-1])) == 1
    [asked] = [m for m in await api.messages(thread_id) if m["role"] == "user"]
    assert [a["model_saw"] for a in asked["attachments"]] == [True]


def _photo_marked(frame: object, message_id: str, saw: bool) -> bool:
    message = getattr(frame, "message", None)
    return (
        message is not None
        and str(message.id) == message_id
        and [a.model_saw for a in message.attachments] == [saw]
    )


async def test_a_pdf_reaches_the_model_as_its_text_with_the_page_count(
    api: OrchestratorApi, tmp_path: Path
) -> None:
    api.llm.script(Text("Two blank pages."))
    await _send(api, "summarise", pdf(pages=2), "bill.pdf")
    user = api.llm.requests[0]["messages"][-1]
    assert user["content"][1]["type"] == "text"
    assert user["content"][1]["text"].startswith(
        "[The user attached a file: bill.pdf (PDF, 2 pages)]"
    )


def test_images_weigh_in_the_context_budget_before_they_are_resolved() -> None:
    def turn(text: str) -> list[dict]:
        photo_part = image_reference(uuid4(), "[The user attached a photo: p.jpg]")
        user = {"role": "user", "content": [{"type": "text", "text": text}, photo_part]}
        return [user, {"role": "assistant", "content": "a fern"}]

    messages = [{"role": "system", "content": "be brief"}]
    for index in range(6):
        messages += turn(f"photo {index}")
    # ~1,600 tokens an image: a 6,000-token window holds the latest two or three turns
    kept = fit_to_context("openai/fake-model", messages, None, window=6_000, reserve=0)
    texts = [m["content"][0]["text"] for m in kept if m["role"] == "user"]
    assert texts[-1] == "photo 5" and 1 <= len(texts) <= 3
