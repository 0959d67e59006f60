"""Websocket frames: the one definition of the realtime protocol."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import msgspec

from app.threads.schemas import RunRead, ThreadMessageRead


class Frame(msgspec.Struct, kw_only=True, tag_field="type"):
    """Base of every frame; `type` tells them apart."""


# Server → client
class MessageFrame(Frame, tag="message"):
    thread_id: UUID
    seq: int
    message: ThreadMessageRead


class DeltaFrame(Frame, tag="delta"):
    thread_id: UUID
    message_id: UUID
    content: str


class RunFrame(Frame, tag="run"):
    thread_id: UUID
    run: RunRead


class SubscribedFrame(Frame, tag="subscribed"):
    thread_id: UUID
    last_seq: int


class ResetFrame(Frame, tag="reset"):
    thread_id: UUID
    last_seq: int


class PongFrame(Frame, tag="pong"):
    pass


class ErrorFrame(Frame, tag="error"):
    error_type: Literal["bad_frame", "unknown_type", "not_found", "limit", "unauthorized"]
    error: str
    allowed_types: list[str] | None = None
    thread_id: UUID | None = None


ThreadFrame = MessageFrame | DeltaFrame | RunFrame
