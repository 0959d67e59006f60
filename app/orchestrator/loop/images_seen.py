"""The user is told, in the message, whether the model that answers it saw its photos.

A model that reads no images gets a one-line stand-in for each (app/orchestrator/door/
images.py) and would answer as if it had looked. So the run marks each image attachment
of the message it answers with `model_saw` (false: the app shows "The assistant could not
see this photo"); a regenerate on a model that reads images turns it true again. Nothing
is read or written for a conversation without images.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, Run, ThreadMessage
from app.orchestrator.door.images import has_references, reads_images
from app.orchestrator.loop.context import RunnerDeps
from app.threads.writer import update_message


def _marked(attachments: list[dict[str, Any]], saw: bool) -> list[dict[str, Any]]:
    return [{**a, "model_saw": saw} if a.get("kind") == "image" else a for a in attachments]


async def tell_images_seen(
    deps: RunnerDeps, run: Run, agent: Agent, messages: list[dict[str, Any]]
) -> None:
    if run.trigger_message_id is None or not has_references(messages):
        return
    saw = reads_images(deps.model_target(agent))

    async def work(session: AsyncSession) -> None:
        message = await session.get(ThreadMessage, run.trigger_message_id)
        if message is None or not message.attachments:
            return
        attachments = _marked(message.attachments, saw)
        if attachments != message.attachments:
            await update_message(session, message, attachments=attachments)

    await deps.write(work)
