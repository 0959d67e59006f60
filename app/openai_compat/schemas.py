"""OpenAI's chat-completions and models shapes, as far as this server speaks them.

Requests are lenient where OpenAI clients send more than we use (sampling parameters,
`user`, …: accepted and ignored; the agent's own model settings rule). A streamed
completion ends with the run's `usage` when `stream_options.include_usage` asks for it.
Responses carry OpenAI's fields plus `metadata` (the run's trace) on the message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec
from litestar.openapi.spec import OpenAPIType
from litestar.openapi.spec import Schema as OpenAPISchema
from litestar.params import BodyKwarg

from app.lib.schema import Input, Schema
from app.threads.activity import ToolStatus
from app.threads.plan import Plan
from app.threads.schemas import CellData, MessageContent, RunStep, RunToolResult

ChatRole = Literal["system", "developer", "user", "assistant", "tool", "function"]
ModelId = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class ChatMessageIn(msgspec.Struct, kw_only=True):
    role: ChatRole
    # Typed loosely (one schema form every generator reads): checked when read.
    content: Annotated[
        Any, msgspec.Meta(description="Text, or an array of content parts (text parts read).")
    ] = None
    name: Annotated[str, msgspec.Meta(max_length=200)] | None = None


class CompletionOptions(msgspec.Struct, kw_only=True):
    """Request `metadata`. `tools` and `tool_calls` may also be JSON text (clients whose
    `metadata` holds only strings); other keys are ignored."""

    thread_id: UUID | None = None
    # Typed loosely (a list, or JSON text): validated as POST …/messages validates them.
    tools: Annotated[
        Any,
        msgspec.Meta(
            description="Allow-list of tool names for this run: an array, or the names "
            "as comma-separated or JSON text."
        ),
    ] = None
    tool_calls: Annotated[
        Any,
        msgspec.Meta(
            description='Pre-flight tool calls: an array of names (`"tasks"`) or '
            '`{"name", "args"}` objects, or that array as JSON text.'
        ),
    ] = None


class StreamOptions(msgspec.Struct, kw_only=True):
    include_usage: bool = False


class ChatCompletionRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """`model` is an agent (`GET /v1/models`: its id, or its name); the last `user`
    message is the new message of the run."""

    model: ModelId
    messages: Annotated[list[ChatMessageIn], msgspec.Meta(min_length=1, max_length=500)]
    stream: bool = False
    stream_options: StreamOptions | None = None
    metadata: CompletionOptions | None = None


# -- the trace of a run -------------------------------------------------------------------


class CompletionTrace(msgspec.Struct, kw_only=True, omit_defaults=True):
    """`choices[0].message.metadata`: where the run is, and what it did."""

    thread_id: UUID
    run_id: UUID
    run_status: Literal["queued", "running", "completed", "failed", "cancelled"]
    steps: list[RunStep]  # as GET …/runs/{run_id} serves them
    tool_results: list[RunToolResult]
    # A planner agent's plan cell as it stands (app/threads/plan.py); absent for other agents.
    plan: Plan | None = None


# -- responses ----------------------------------------------------------------------------
class CompletionMessage(msgspec.Struct, kw_only=True):
    role: Literal["assistant"] = "assistant"
    content: str | None
    refusal: None = None
    metadata: CompletionTrace


class CompletionChoice(msgspec.Struct, kw_only=True):
    index: int = 0
    message: CompletionMessage
    finish_reason: Literal["stop", "length"]


class PromptTokensDetails(msgspec.Struct, kw_only=True):
    cached_tokens: int


class CompletionTokensDetails(msgspec.Struct, kw_only=True):
    reasoning_tokens: int


class CompletionUsage(msgspec.Struct, kw_only=True):
    """The run's model usage, summed over all its model calls (tool turns included)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class ChatCompletion(msgspec.Struct, kw_only=True):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: CompletionUsage


class ChunkDelta(msgspec.Struct, kw_only=True, omit_defaults=True):
    role: Literal["assistant"] | None = None
    content: str | None = None
    metadata: CompletionTrace | None = None


class ChunkChoice(msgspec.Struct, kw_only=True):
    index: int = 0
    delta: ChunkDelta
    finish_reason: Literal["stop", "length"] | None = None


class ChatCompletionChunk(msgspec.Struct, kw_only=True):
    """One `data:` event of a streamed completion; `data: [DONE]` ends the stream. The
    first chunk's delta carries `metadata` with the thread and run ids, the last one (with
    `finish_reason`) the run's whole trace; then, as OpenAI's `stream_options.include_usage`
    sends it, a chunk with no choices and the run's `usage`."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]


class ChatCompletionUsageChunk(ChatCompletionChunk, kw_only=True):
    """The last chunk before `[DONE]`: `choices` empty, the run's `usage`."""

    usage: CompletionUsage


class AgentModel(msgspec.Struct, kw_only=True):
    """An agent offered as a model: call it with `model` = `id` (or its `name`)."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str
    name: str
    agent_type: str


class ModelList(msgspec.Struct, kw_only=True):
    object: Literal["list"] = "list"
    data: list[AgentModel]


class OpenAIErrorBody(msgspec.Struct, kw_only=True):
    message: str
    type: str
    param: str | None = None
    code: str | None = None
    thread_id: UUID | None = None
    run_id: UUID | None = None


class OpenAIError(msgspec.Struct, kw_only=True):
    """Every error of `/v1`, in OpenAI's shape (OpenAI clients parse it)."""

    error: OpenAIErrorBody


# -- POST /v1/agent ------------------------------------------------------------------------
# As OpenAI's `metadata`: up to 16 pairs of strings
MetadataKey = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
MetadataValue = Annotated[str, msgspec.Meta(max_length=512)]
# Litestar's schema of a dict keeps neither its keys' nor its size's bounds: said here
_METADATA_SCHEMA = BodyKwarg(
    schema_extra={
        "propertyNames": OpenAPISchema(type=OpenAPIType.STRING, min_length=1, max_length=64),
        "additionalProperties": OpenAPISchema(type=OpenAPIType.STRING, max_length=512),
        "maxProperties": 16,
    }
)
Metadata = Annotated[
    dict[MetadataKey, MetadataValue], msgspec.Meta(max_length=16), _METADATA_SCHEMA
]


class AgentRunRequest(Input):
    """One turn of an agent on a prompt, in a new thread."""

    prompt: MessageContent
    # an agent's id or name, as `model` of /v1/chat/completions; absent: your first agent
    agent: ModelId | None = None
    # the caller's own labels (up to 16 strings), answered back unchanged
    metadata: Metadata | None = None


AgentStepType = Literal["memory", "tool", "completion"]
AgentRunStatus = Literal["completed", "failed", "cancelled"]


class AgentRunStep(Schema, kw_only=True):
    """One executed step: a tool cell (`memory` for the memory tool, else `tool`) as the
    app renders it, or the final `completion` holding the answer (`content`)."""

    type: AgentStepType
    name: str  # the tool; `completion` for the answer
    # a tool cell's status; the completion's: success (answered) or failure (no answer)
    status: ToolStatus
    display_message: str | None = None
    data: CellData = msgspec.UNSET  # the cell's (ToolData), absent when it has none
    error: str | None = None
    step_id: str | None = None  # the plan step this call executed (planner runs)
    content: str | None = None  # the completion's answer


class AgentRun(Schema, kw_only=True, omit_defaults=True):
    """A finished turn (`status` completed, failed or cancelled; a failed one says why in
    `error`): the answer, the plan (planner agents; absent for others) and the steps in
    order. Fields without a value are left out."""

    id: str
    thread_id: UUID
    run_id: UUID
    status: AgentRunStatus
    answer: str | None = None
    error: str | None = None
    plan: Plan | None = None
    steps: list[AgentRunStep]
    metadata: dict[str, str] | None = None


def completion_usage(usage: dict[str, Any]) -> CompletionUsage:
    """OpenAI's `usage` of a run's usage columns (`Run.usage`)."""
    prompt, completion = usage["input_tokens"], usage["output_tokens"]
    return CompletionUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=usage["cached_tokens"]),
        completion_tokens_details=CompletionTokensDetails(
            reasoning_tokens=usage["reasoning_tokens"]
        ),
    )
