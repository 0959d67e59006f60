"""The offline demo model (`demo/<anything>`) as a client of its own: it builds the
chunks a provider would stream (text in pieces, whole tool calls, usage last), so a demo
run goes through the same door (assembly, usage, metrics) without a network."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import msgspec

from app.orchestrator.door.demo_model import demo_plan, demo_reply, split_text
from app.orchestrator.door.types import (
    Choice,
    Chunk,
    ChunkUsage,
    Delta,
    FunctionDelta,
    ModelCall,
    ToolCallDelta,
)

_json = msgspec.json.Encoder().encode


class DemoClient:
    """`ModelClient` for `demo/…`."""

    async def open(self, call: ModelCall) -> AsyncIterator[list[Chunk]]:
        if call.response_format is not None:
            reply = demo_plan(call.messages)
        else:
            reply = demo_reply(call.messages, call.tools)
        chunks = [_text(piece) for piece in (split_text(reply.text) if reply.text else ())]
        calls = [
            ToolCallDelta(
                index=index,
                id=f"call_demo_{random.getrandbits(40):x}",
                function=FunctionDelta(name=call_["name"], arguments=call_["arguments"]),
            )
            for index, call_ in enumerate(reply.tool_calls)
        ]
        if calls:
            chunks.append(Chunk(choices=[Choice(delta=Delta(tool_calls=calls))]))
        finish = "tool_calls" if calls else "stop"
        chunks.append(Chunk(choices=[Choice(delta=Delta(), finish_reason=finish)]))
        chunks.append(Chunk(usage=_usage(call, reply.text, calls)))
        return _one_by_one(chunks)


def _text(piece: str) -> Chunk:
    return Chunk(choices=[Choice(delta=Delta(content=piece))])


def _usage(call: ModelCall, text: str, calls: list[ToolCallDelta]) -> ChunkUsage:
    """About a token per four characters: the demo has no tokenizer, and a run should
    still show what a real model's usage looks like."""
    prompt = len(_json(call.messages)) + len(_json(call.tools or []))
    answer = len(text) + sum(len(_json(c)) for c in calls)
    return ChunkUsage(prompt_tokens=max(1, prompt // 4), completion_tokens=max(1, answer // 4))


async def _one_by_one(chunks: list[Chunk]) -> AsyncIterator[list[Chunk]]:
    for chunk in chunks:
        yield [chunk]
