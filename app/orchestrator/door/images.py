"""Attachments in a prompt, made what the provider reads, just before the call.

The history (app/orchestrator/loop/history.py) refers to an image by its attachment id
(`attachment:<id>`), so fitting the prompt to the window never weighs megabytes of
base64. Here, for a model that reads images, each reference becomes a data URL of the
image as models get it (a JPEG without metadata, its long side bounded:
app/attachments/images.py); any other model gets the part's one-line stand-in instead,
never a provider's 400.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any
from uuid import UUID

from app.attachments.storage import MODEL_IMAGE, object_key
from app.orchestrator.door import model_info
from app.orchestrator.door.types import ModelTarget

logger = logging.getLogger(__name__)
REFERENCE = "attachment:"
MARK = b'"url":"attachment:'  # a reference in the encoded prompt (the fitter's rough size)
# What an image costs in the window, as characters of text (~1,600 tokens; see model_info).
IMAGE_CHARS = 3 * 1_600


def image_reference(attachment_id: UUID, stand_in: str) -> dict[str, Any]:
    """An image part of a user message, resolved here once the prompt is fitted."""
    url = f"{REFERENCE}{attachment_id}"
    return {"type": "image_url", "image_url": {"url": url}, "stand_in": stand_in}


def _is_reference(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and part.get("type") == "image_url"
        and str(part.get("image_url", {}).get("url", "")).startswith(REFERENCE)
    )


def has_references(messages: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(_is_reference(p) for p in m["content"])
        for m in messages
    )


def reads_images(target: ModelTarget) -> bool:
    return target.image_store is not None and (
        target.vision or model_info.supports_images(model_info.map_name(target))
    )


async def _data_url(target: ModelTarget, part: dict[str, Any]) -> dict[str, Any]:
    attachment_id = part["image_url"]["url"].removeprefix(REFERENCE)
    try:
        data = await target.image_store.read_bytes(object_key(UUID(attachment_id), MODEL_IMAGE))  # type: ignore[union-attr]
    except (OSError, ValueError):  # deleted meanwhile: say so rather than fail the turn
        logger.warning("attachment %s is gone from storage", attachment_id)
        return {"type": "text", "text": f"{part['stand_in']} (no longer available)"}
    encoded = await asyncio.to_thread(base64.b64encode, data)
    return {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{encoded.decode()}"}}


async def resolved(target: ModelTarget, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with every image reference made a data URL or a stand-in (new dicts:
    the caller's history is left as it was, to be resolved again next turn)."""
    if not has_references(messages):
        return messages
    readable = reads_images(target)
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not any(_is_reference(p) for p in content):
            out.append(message)
            continue
        parts = []
        for part in content:
            if not _is_reference(part):
                parts.append(part)
            elif readable:
                parts.append(await _data_url(target, part))
            else:
                parts.append(
                    {"type": "text", "text": f"{part['stand_in']} (this model cannot see images)"}
                )
        out.append({**message, "content": parts})
    return out
