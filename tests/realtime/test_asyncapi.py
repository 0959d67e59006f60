"""openapi/asyncapi.json is generated from the frame Structs and kept current."""

from __future__ import annotations

import json

from app.realtime.asyncapi import ASYNCAPI_PATH, build_document, render


def test_committed_asyncapi_document_is_current() -> None:
    assert ASYNCAPI_PATH.read_text() == render(), (
        "openapi/asyncapi.json is out of date: run `uv run python -m app.realtime.asyncapi`"
    )


def test_document_covers_every_frame_type() -> None:
    document = build_document()
    assert set(document["channels"]["ws"]["messages"]) == {
        "subscribe", "unsubscribe", "ping",
        "message", "subscribed", "delta", "run", "reset", "pong", "error",
    }  # fmt: skip
    for ref in json.dumps(document).split('"$ref": "')[1:]:
        path = ref.split('"', 1)[0].removeprefix("#/").split("/")
        node = document
        for part in path:
            node = node[part]  # every reference resolves
