"""Websocket frames: the one definition of the realtime protocol."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.lib.open_schemas import open_enum
from app.memories.schemas import MemoryRead
from app.tasks.schemas import TaskRead
from app.threads.schemas import RunRead, ThreadMessageRead


class Frame(msgspec.Struct, kw_only=True, tag_field="type"):
    """Base of every frame; `type` tells them apart."""


# Server → client
class MessageFrame(Frame, tag="message"):
    """A message was created or updated; apply it as an upsert by `message.id`."""

    thread_id: UUID
    seq: int
    message: ThreadMessageRead


class BranchFrame(Frame, tag="branch"):
    """The thread shows another branch from `seq` on: the one ending at `current_leaf_id`
    (null: no message left). Sent when an edit, a regenerate, a switch or a delete moves
    the leaf, here or on another device; a new message written below the leaf moves it
    without one (it becomes the leaf).

    `deleted_message_ids`: messages a delete removed with this change (drop them). A
    replay ends with one of these whenever the leaf may have moved after the cursor: it
    names no ids (what was deleted is on no branch a leaf reaches), and its `seq`, the
    thread's last, may equal that of the `message` frame before it.
    """

    thread_id: UUID
    seq: int
    current_leaf_id: UUID | None
    deleted_message_ids: list[UUID]


class DeltaFrame(Frame, tag="delta"):
    """Assistant text as it streams; ephemeral (never replayed)."""

    thread_id: UUID
    message_id: UUID
    content: str


class ToolOutputFrame(Frame, tag="tool_output"):
    """A running tool's output, chunk by chunk; ephemeral (never replayed).

    `offset` is the number of characters (Unicode code points) the call streamed before
    this chunk. The cell's `tool_activity.data.output` holds the output so far (written a
    few times a second, capped, `data.truncated: true` once capped): append a chunk when
    its `offset` equals the length held, skip it when it is lower (already in the cell).
    """

    thread_id: UUID
    message_id: UUID
    offset: Annotated[int, msgspec.Meta(ge=0)]
    chunk: str


class ToolArgumentsFrame(Frame, tag="tool_arguments"):
    """The arguments of a tool call the model is still writing (its cell `preparing`),
    piece by piece; ephemeral (never replayed).

    `offset` is the number of characters (Unicode code points) of the arguments before
    this chunk: append a chunk when its `offset` equals the length held, skip it when it
    is lower; one that is higher came after a gap (a late subscribe): wait for the cell.
    Pieces go out coalesced like `delta` (at most one frame per call per
    `STREAM_DELTA_SECONDS`, wider under load); the last one before the cell leaves
    `preparing`. The arguments are JSON text cut
    anywhere (not parseable until complete); once written and checked, the cell's
    `input` holds them.
    """

    thread_id: UUID
    message_id: UUID
    offset: Annotated[int, msgspec.Meta(ge=0)]
    chunk: str


class RunFrame(Frame, tag="run"):
    """A run's status changed (also sent once after `subscribed`: the thread's latest run).

    `position`: the run is `queued` and waits for a runner slot (all taken, or the server
    short of CPU); it is this far back in line (1: next), fairly across users; sent again
    as it moves up. null otherwise.
    """

    thread_id: UUID
    run: RunRead
    position: Annotated[int, msgspec.Meta(ge=1)] | None = None


class TaskFrame(Frame, tag="task"):
    """One of your tasks changed (created, edited, completed, snoozed: here or on another
    device, or by an agent); sent to every socket of its owner, no subscription needed.
    Apply it as an upsert by `task.id`; ephemeral (a client that reconnects refetches
    `GET /api/tasks`)."""

    task: TaskRead


class SubscribedFrame(Frame, tag="subscribed"):
    """The replay of every change after `after_seq` is complete; live frames follow."""

    thread_id: UUID
    last_seq: int


class ResetFrame(Frame, tag="reset"):
    """The cursor cannot be served (it is ahead of the thread): refetch, then subscribe again."""

    thread_id: UUID
    last_seq: int


MemoryChange = Literal["saved", "deleted", "cleared", "stale"]
# New values may come: clients keep a fallback (refetch the list).
open_enum(MemoryChange, "MemoryChange")


class MemoryFrame(Frame, tag="memory", omit_defaults=True):
    """One of your memories changed, from another device or an agent's `memory` tool.

    Every socket of the user receives these, without subscribing. `saved`: upsert
    `memory` by id (null when too big to carry: `GET /api/memories/{memory_id}`);
    `deleted`: drop `memory_id`; `cleared`: drop every memory; `stale`: changes may have
    been lost (a pub/sub outage): refetch `GET /api/memories`. The list is the truth:
    after a reconnect, refetch it.
    """

    change: MemoryChange
    memory_id: UUID | None = None
    memory: MemoryRead | None = None


class PongFrame(Frame, tag="pong"):
    """The answer to `ping`."""


FrameErrorType = Literal["bad_frame", "unknown_type", "not_found", "limit", "unauthorized"]
open_enum(FrameErrorType, "FrameErrorType")  # new values may come: clients keep a fallback


class ErrorFrame(Frame, tag="error"):
    """A frame was refused (bad, unknown type, limit) or a thread is unknown; the socket stays open."""

    error_type: FrameErrorType
    error: str
    allowed_types: list[str] | None = None
    thread_id: UUID | None = None


ThreadFrame = (
    MessageFrame | BranchFrame | DeltaFrame | ToolOutputFrame | ToolArgumentsFrame | RunFrame
)
ServerFrame = (
    MessageFrame
    | BranchFrame
    | SubscribedFrame
    | DeltaFrame
    | ToolOutputFrame
    | ToolArgumentsFrame
    | RunFrame
    | TaskFrame
    | ResetFrame
    | MemoryFrame
    | PongFrame
    | ErrorFrame
)

Seq = Annotated[int, msgspec.Meta(ge=0, le=2**53)]


# Client → server
class SubscribeFrame(Frame, tag="subscribe", forbid_unknown_fields=True):
    """Start (or restart) a thread subscription after the highest `seq` the client holds."""

    thread_id: UUID
    after_seq: Seq = 0


class UnsubscribeFrame(Frame, tag="unsubscribe", forbid_unknown_fields=True):
    """Stop receiving a thread's frames."""

    thread_id: UUID


class PingFrame(Frame, tag="ping", forbid_unknown_fields=True):
    """App-level keepalive; answered with `pong` (protocol pings are answered too)."""


ClientFrame = SubscribeFrame | UnsubscribeFrame | PingFrame
CLIENT_FRAME_TYPES = ["subscribe", "unsubscribe", "ping"]

# Close codes (application range), documented in openapi/asyncapi.json.
CLOSE_UNAUTHORIZED = 4401
CLOSE_IDLE = 4408
CLOSE_TOO_SLOW = 4429
