"""The AsyncAPI document of `/api/ws`, generated from the frame Structs in events.py.

uv run python -m app.realtime.asyncapi           # rewrite openapi/asyncapi.json
uv run python -m app.realtime.asyncapi --check   # exit 1 if the file is out of date
"""

from __future__ import annotations

import json
import sys
from typing import Any

from app.lib.open_schemas import open_union, with_open_schemas
from app.lib.struct_schema import REF_TEMPLATE, struct_components, tagged_union, unknown_member
from app.realtime import events
from app.settings import PROJECT_ROOT
from app.tools.assembly import data_components

ASYNCAPI_PATH = PROJECT_ROOT / "openapi" / "asyncapi.json"
CLIENT_FRAMES: list[type[events.Frame]] = [
    events.SubscribeFrame,
    events.UnsubscribeFrame,
    events.PingFrame,
]
SERVER_FRAMES: list[type[events.Frame]] = [
    events.MessageFrame,
    events.BranchFrame,
    events.SubscribedFrame,
    events.DeltaFrame,
    events.ToolOutputFrame,
    events.ToolArgumentsFrame,
    events.RunFrame,
    events.TaskFrame,
    events.ResetFrame,
    events.MemoryFrame,
    events.PongFrame,
    events.ErrorFrame,
]
DESCRIPTION = """\
One socket carries several thread subscriptions. Auth: `Authorization: Bearer <token>`
or `?token=<token>`.

Guarantee: a client that subscribes with the highest `seq` it has seen receives every
message change after it, at least once, in ascending `seq` per thread. Applying
`message` frames as upserts by id (ignoring a `seq` lower than the one held) makes its
state equal `GET /api/threads/{thread_id}/messages`, across reconnects, server restarts
and several server processes.

Branches: a `branch` frame (also with a `seq`) says which branch the thread shows from
then on (`current_leaf_id`) after an edit, a regenerate, a switch or a delete, and names
the messages a delete removed. Show the branch ending at the latest `current_leaf_id`
(walk `parent_id` up); a new message written below it becomes the leaf.

On `subscribe` the server replays every message with `seq > after_seq` from the
database (then a `branch` frame with the thread's `current_leaf_id` when the leaf may
have moved meanwhile), sends `subscribed` with `last_seq`, then the thread's latest run
(`run`), then live frames. A cursor ahead of the thread gets `reset`: refetch, then subscribe again.

Close codes: 4401 missing, invalid, expired or revoked token (the socket is accepted,
then closed; an open socket is closed likewise within seconds of its token being revoked
or expiring); 4408 idle (no client frame within the idle timeout: send `ping`);
4429 too slow (the per-socket send queue overflowed: reconnect and resubscribe with
your last `seq`, nothing is lost); 1011 server error (reconnect likewise).

Limits (per socket; defaults, configurable): client frames of at most 4096 bytes, 20 frames/s
with a burst of 60, 100 subscriptions; breaking one answers an `error` frame with
`error_type` `limit` and the socket stays open. The server also answers protocol-level
pings (uvicorn sends its own every 20 s); they count as activity for the idle timeout only
when the server runs the ping-aware protocol (docs/operations.md, "Realtime under trouble").

Memories: every socket of a user receives `memory` frames when one of the user's memories
is saved, edited or deleted (from another device or by an agent), without subscribing;
they carry no `seq`: after a reconnect, refetch `GET /api/memories`.

If the pub/sub backend (Redis) was unreachable, subscriptions stay open and receive the
changes they missed from the database (`message` frames in ascending `seq`, then the
thread's latest `run`) within seconds of it coming back.
"""


def _tag(struct: type[events.Frame]) -> str:
    return str(struct.__struct_config__.tag)


def _ref(struct: type) -> str:
    return REF_TEMPLATE.format(name=struct.__name__)


SERVER_FRAME_FALLBACK = (
    "new frame types may be added; decode `type` first and skip a frame whose `type` you "
    "do not know (nothing needed to stay in sync comes only in a new frame type)."
)


UNKNOWN_FRAME = (
    "A frame of a type this app does not know (added after it was built): what an older "
    "app decodes a newer frame into, its `type` and every other key kept. Skip it."
)
# Also published open (`OpenServerFrame`: app/lib/open_schemas.py): Apple's generator reads
# the `oneOf` as closed whatever its members.
open_union("ServerFrame", "UnknownServerFrame", UNKNOWN_FRAME)
# openapi-python-client makes no type of a component that is a union (only of objects):
# a property of one is generated as a union type with its parser.
SERVER_FRAME_ENVELOPE = (
    "Not sent on the socket: one server frame held in `frame`, for generators that make "
    "no type of a top-level union (openapi-python-client). In Python, "
    '`ServerFrameEnvelope.from_dict({"frame": json.loads(text)}).frame` is the frame\'s '
    "model, an `UnknownFrame` for a type this app does not know."
)


def frame_components() -> dict[str, dict[str, Any]]:
    """The frames' schemas (and those they contain, a cell's `data` union `ToolData`
    with its members), `ClientFrame` and `ServerFrame` (open: `UnknownFrame` last), and
    `ServerFrameEnvelope` holding one.

    Also components of openapi/openapi.json, so an app generating its models from that
    one document gets the frame types too.
    """
    schemas = struct_components(CLIENT_FRAMES + SERVER_FRAMES)  # `type`: a const per frame
    schemas.update(data_components())
    schemas["ClientFrame"] = tagged_union(CLIENT_FRAMES, "A frame the client sends.")
    schemas["UnknownFrame"] = unknown_member(SERVER_FRAMES, "UnknownFrame", UNKNOWN_FRAME)
    schemas["ServerFrame"] = tagged_union(
        SERVER_FRAMES,
        "A frame the server sends.",
        fallback=SERVER_FRAME_FALLBACK,
        fallback_member="UnknownFrame",
    )
    schemas["ServerFrameEnvelope"] = {
        "type": "object",
        "title": "ServerFrameEnvelope",
        "description": SERVER_FRAME_ENVELOPE,
        "properties": {"frame": {"$ref": _ref_name("ServerFrame")}},
        "required": ["frame"],
    }
    return schemas


def _ref_name(name: str) -> str:
    return REF_TEMPLATE.format(name=name)


def _asyncapi_schemas() -> dict[str, dict[str, Any]]:
    """The frames' schemas in AsyncAPI's dialect: its Schema Object names the discriminating
    property by a string (`discriminator: "type"`), where OpenAPI's takes an object with a
    mapping (openapi.json keeps that form; the official parser rejects it here)."""
    schemas = with_open_schemas(frame_components())
    for name, schema in schemas.items():
        if isinstance(schema.get("discriminator"), dict):
            schemas[name] = {**schema, "discriminator": schema["discriminator"]["propertyName"]}
        _name_enums(name, schemas[name])
    return schemas


def _name_enums(component: str, schema: dict[str, Any]) -> None:
    """A property's inline enum titled `<Component><Property>` (ToolActivityStatus), the
    name openapi-python-client gives it: AsyncAPI generators would call it AnonymousSchema_N."""
    for prop, member in (schema.get("properties") or {}).items():
        if isinstance(member, dict) and "enum" in member and "title" not in member:
            words = "".join(word.capitalize() for word in prop.split("_"))
            member["title"] = f"{component}{words}"


def _message(struct: type[events.Frame]) -> dict[str, Any]:
    return {
        "name": _tag(struct),
        "title": struct.__name__,
        "summary": (struct.__doc__ or "").strip(),
        "contentType": "application/json",
        "payload": {"$ref": _ref(struct)},
    }


def _operation(action: str, structs: list[type[events.Frame]], summary: str) -> dict[str, Any]:
    return {
        "action": action,
        "summary": summary,
        "channel": {"$ref": "#/channels/ws"},
        "messages": [{"$ref": f"#/channels/ws/messages/{_tag(s)}"} for s in structs],
    }


def build_document() -> dict[str, Any]:
    structs = CLIENT_FRAMES + SERVER_FRAMES
    schemas = _asyncapi_schemas()
    return {
        "asyncapi": "3.0.0",
        "info": {"title": "Toolcells realtime API", "version": "1.0.0", "description": DESCRIPTION},
        "servers": {"local": {"host": "localhost:8000", "protocol": "ws", "pathname": "/api/ws"}},
        "channels": {
            "ws": {
                "address": "/api/ws",
                "messages": {
                    _tag(s): {"$ref": f"#/components/messages/{_tag(s)}"} for s in structs
                },
                "bindings": {
                    "ws": {
                        "query": {
                            "type": "object",
                            "properties": {"token": {"type": "string", "maxLength": 200}},
                        },
                        "headers": {
                            "type": "object",
                            "properties": {"Authorization": {"type": "string"}},
                        },
                    }
                },
            }
        },
        "operations": {
            "receiveClientFrames": _operation("receive", CLIENT_FRAMES, "Frames the client sends."),
            "sendServerFrames": _operation("send", SERVER_FRAMES, "Frames the server sends."),
        },
        "components": {
            "schemas": schemas,
            "messages": {_tag(s): _message(s) for s in structs},
        },
    }


def render() -> str:
    return json.dumps(build_document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = ASYNCAPI_PATH.read_text() if ASYNCAPI_PATH.exists() else ""
        if current != text:
            print(f"{ASYNCAPI_PATH} is out of date: run `uv run python -m app.realtime.asyncapi`")
            return 1
        return 0
    ASYNCAPI_PATH.parent.mkdir(exist_ok=True)
    ASYNCAPI_PATH.write_text(text)
    print(f"wrote {ASYNCAPI_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
