"""What travels on a thread's channel: one header line, then the frame's JSON.

The header lets a forwarder decide (deduplicate, detect a gap, order run states) without
decoding the frame, and the JSON after it is sent to clients as is. A message frame too
big for a pub/sub payload travels as a reference (`r<seq>`): the forwarder then reads
the row from the database, which it does for any gap anyway.

    m<seq>\\n<message frame json>     a message create/update
    b<seq>\\n<branch frame json>      the thread's leaf moved (a switch, an edit, a delete…)
    r<seq>\\n                         either, too big to carry: read it from the database
    R<run_id>:<status>\\n<run json>   a run status change
    d\\n<frame json>                  an ephemeral frame (delta, tool_output, tool_arguments;
                                     on a user's channel: memory)
    p<token>\\n                       a probe a new subscriber sends itself (see subscription.py)
    g\\n                              changes may have been lost: read them from the database

The control channel (one per deployment, see channels.py) carries probes too, and

    x<token digest>\\n               a token was revoked: close its sockets
    w<wake-up>\\n                   a run queued, a cancel, an approval (app/orchestrator/scheduling/notify.py)
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec

from app.realtime.events import BranchFrame, Frame, MemoryFrame, MessageFrame, RunFrame

# Small payloads: PostgreSQL NOTIFY caps them under 8 KB, and Redis fans every byte out.
MAX_INLINE_BYTES = 6000

RUN_STATUS_RANK = {"queued": 0, "running": 1, "completed": 2, "failed": 2, "cancelled": 2}

_encode = msgspec.json.Encoder().encode


class ChannelEvent(NamedTuple):
    kind: str
    seq: int
    key: str
    body: bytes


def encode_frame(frame: Frame) -> bytes:
    body = _encode(frame)
    if isinstance(frame, MemoryFrame) and len(body) > MAX_INLINE_BYTES:
        # A long memory travels by id: the client reads it with GetMemory.
        body = _encode(MemoryFrame(change=frame.change, memory_id=frame.memory_id))
    if isinstance(frame, MessageFrame | BranchFrame):
        if len(body) > MAX_INLINE_BYTES:  # a branch frame: the replay's, naming no ids
            return b"r%d\n" % frame.seq
        return (b"m%d\n" if isinstance(frame, MessageFrame) else b"b%d\n") % frame.seq + body
    if isinstance(frame, RunFrame):
        return f"R{frame.run.id}:{frame.run.status}\n".encode() + body
    return b"d\n" + body


GAP = b"g\n"


def encode_revoked(token_digest: str) -> bytes:
    return f"x{token_digest}\n".encode()


def encode_wakeup(payload: str) -> bytes:
    return f"w{payload}\n".encode()


def encode_probe(token: str) -> bytes:
    return f"p{token}\n".encode()


def decode_event(payload: bytes) -> ChannelEvent:
    head, _, body = payload.partition(b"\n")
    kind, rest = chr(head[0]) if head else "?", head[1:].decode()
    if kind in ("m", "r", "b"):
        return ChannelEvent(kind, int(rest), "", body)
    return ChannelEvent(kind, 0, rest, body)
