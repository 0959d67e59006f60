"""What every model client speaks: the call it gets and the chunks it yields.

The chunk shape is OpenAI's `chat.completion.chunk` (attributes `choices[0].delta.content`,
`.tool_calls`, `.finish_reason`, `usage`): our own client decodes straight into these
msgspec Structs, the demo builds them, and litellm's streaming chunks already have it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

import msgspec

ClientKind = Literal["openai", "litellm", "demo"]


# -- chunks: only what the door reads; msgspec skips every other field ------------------
class FunctionDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct):
    index: int | None = None  # some OpenAI-compatible servers leave it out
    id: str | None = None
    function: FunctionDelta | None = None


class Delta(msgspec.Struct):
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class Choice(msgspec.Struct):
    delta: Delta | None = None
    finish_reason: str | None = None


class PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class ChunkUsage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptDetails | None = None
    completion_tokens_details: CompletionDetails | None = None


class XGroq(msgspec.Struct):
    usage: ChunkUsage | None = None  # Groq reports usage here, not in `usage`


class Chunk(msgspec.Struct):
    choices: list[Choice] | None = None  # empty or absent in a last chunk carrying usage
    usage: ChunkUsage | None = None
    error: Any = None  # an error object inside a 200 stream (vLLM, Groq, OpenRouter…)
    x_groq: XGroq | None = None


class StreamedCall(NamedTuple):
    """A tool call as far as the model has written it (`stream_turn`'s `on_calls`): its
    place in the turn, its id (the one the turn's call will have), its name and the
    arguments text so far."""

    index: int
    id: str
    name: str
    arguments: str


# -- usage ---------------------------------------------------------------------------
@dataclass
class Usage:
    """Tokens of one call or summed over a run; `cost` in USD (None: no price known)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None
    calls: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.calls += other.calls
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost

    @property
    def empty(self) -> bool:
        return self.calls == 0 and self.input_tokens == 0 and self.output_tokens == 0


def usage_of(raw: Any) -> Usage | None:
    """A chunk's usage (ours or litellm's: the same attribute names) as `Usage`."""
    if raw is None:
        return None
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    return Usage(
        input_tokens=getattr(raw, "prompt_tokens", None) or 0,
        output_tokens=getattr(raw, "completion_tokens", None) or 0,
        cached_tokens=getattr(prompt_details, "cached_tokens", None) or 0,
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None) or 0,
        calls=1,
    )


# -- the call --------------------------------------------------------------------------
@dataclass(frozen=True)
class Prices:
    """A profile's own prices, USD per million tokens (they win over litellm's map)."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None  # None: as `input`


@dataclass(frozen=True)
class ModelTarget:
    """Where one agent's model calls go. `model` is the agent's model name as written
    (`openai/gpt-4o-mini`, `<profile>/<model>`); `kind` picks the client (None: from the
    model's provider prefix, see llm.client_kind). Secrets are kept out of its repr."""

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0  # longest silence while waiting for the next chunk
    max_retries: int = 2
    retry_base: float = 0.5  # first backoff; doubles per attempt unless retry-after says
    fast_stream: bool = True  # OpenAI-format providers through our client (False: litellm)
    kind: ClientKind | None = None
    wire_model: str | None = None  # the name the provider knows (None: derived from `model`)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    prices: Prices | None = None
    profile: str = "default"
    agent_type: str = ""
    stream_usage: bool = True  # ask OpenAI-format providers for usage in the stream
    # Connections our client holds open to this target's provider (one per streaming call;
    # beyond them calls wait for one): LLM_MAX_CONNECTIONS_PER_PROVIDER or the profile's.
    max_connections: int = 1000
    # Images in the prompt (app/orchestrator/door/images.py): where their bytes are (an
    # attachments Storage; None: every image gets its text stand-in), and whether the
    # model reads them although litellm's map does not say so (LLM_VISION_MODELS).
    image_store: Any = field(default=None, repr=False, compare=False)
    vision: bool = False

    @property
    def provider(self) -> str:
        """Whose connections these are: the profile's name, or for the default profile
        the model's provider prefix (`openai`, `groq`…)."""
        if self.profile != "default":
            return self.profile
        return self.model.partition("/")[0] if "/" in self.model else "default"


@dataclass(frozen=True)
class ModelCall:
    target: ModelTarget
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    response_format: dict[str, Any] | None = None


class ModelClient(Protocol):
    """Stream this turn: batches of OpenAI-format chunks (one batch per read of the wire,
    or per chunk); failures raise `LLMError` (app/orchestrator/door/errors.py)."""

    async def open(self, call: ModelCall) -> AsyncIterator[list[Any]]: ...
