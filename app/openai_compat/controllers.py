"""`/v1`: OpenAI's models and chat-completions endpoints over the caller's agents.

A completion is an ordinary run: the user message and the run are stored and committed
first (the app sees them at once, with every tool cell the run makes), then the answer is
awaited (`RunWatch`). A client that goes away, or a wait past `COMPLETION_WAIT_SECONDS`,
ends only the waiting: the run continues and its answer lands in the thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIResponse, Operation
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.accounts.deps import SignedInController
from app.agents.services import list_agents
from app.db.models import Run, RunStatus, User
from app.openai_compat.completions import StartedCompletion, commit_started, start_completion
from app.openai_compat.errors import (
    EXCEPTION_HANDLERS,
    CompletionError,
    error_responses,
    openai_error,
    timeout_error,
)
from app.openai_compat.models import agent_model
from app.openai_compat.schemas import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatCompletionUsageChunk,
    ChunkChoice,
    ChunkDelta,
    CompletionChoice,
    CompletionMessage,
    CompletionTrace,
    ModelList,
    completion_usage,
)
from app.openai_compat.trace import answer_text, completion_trace, run_messages
from app.openai_compat.watch import RunWatch, StepsChanged, WaitTimeout, sessions_for
from app.realtime.channels import RealtimeChannels
from app.settings import Settings
from app.usage.budget import refuse_if_spent

_encode = msgspec.json.Encoder().encode
# Documentation only: the streamed form of the 200 answer is declared under this key and
# moved into the 200 response by ChatCompletionOperation (one status, two media types).
_STREAMED = 2000


@dataclass
class ChatCompletionOperation(Operation):
    def __post_init__(self) -> None:
        responses = self.responses or {}
        streamed = responses.pop(str(_STREAMED), None)
        answer = responses.get("200")
        if isinstance(streamed, OpenAPIResponse) and isinstance(answer, OpenAPIResponse):
            answer.content = {**(answer.content or {}), **(streamed.content or {})}


@dataclass(frozen=True)
class Answer:
    """What the endpoints need to label their chunks and completions."""

    id: str
    created: int
    model: str
    with_usage: bool = False  # a streamed answer ends with a usage chunk


def _answer_of(started: StartedCompletion, data: ChatCompletionRequest) -> Answer:
    run = started.run
    options = data.stream_options
    return Answer(
        id=f"chatcmpl-{run.id.hex}",
        created=int(run.created_at.timestamp()),
        model=data.model,
        with_usage=bool(options and options.include_usage),
    )


def _failure(run: Run) -> CompletionError:
    ids = {"thread_id": run.thread_id, "run_id": run.id}
    if run.status == RunStatus.CANCELLED.value:
        return CompletionError(409, "The run was cancelled.", "run_cancelled", **ids)
    return CompletionError(500, f"The run failed: {run.error}", "run_failed", **ids)


def _sse(body: Any) -> bytes:
    return b"data: " + _encode(body) + b"\n\n"


async def _chunks(
    watch: RunWatch, started: StartedCompletion, answer: Answer, wait: float
) -> AsyncIterator[bytes]:
    def chunk(delta: ChunkDelta, finish: Any = None) -> bytes:
        choice = ChunkChoice(delta=delta, finish_reason=finish)
        return _sse(ChatCompletionChunk(id=answer.id, created=answer.created,
                                        model=answer.model, choices=[choice]))  # fmt: skip

    run = started.run
    where = CompletionTrace(
        thread_id=run.thread_id, run_id=run.id, run_status="queued", steps=[], tool_results=[]
    )
    async with watch:
        yield chunk(ChunkDelta(role="assistant", content="", metadata=where))
        try:
            async for text in watch.deltas(wait):
                if isinstance(text, StepsChanged):  # a step began or ended: the trace so far
                    assert watch.run is not None
                    async with watch.sessions() as session:
                        so_far = await completion_trace(session, watch.run)
                    yield chunk(ChunkDelta(metadata=so_far))
                else:
                    yield chunk(ChunkDelta(content=text))
        except WaitTimeout:
            error = timeout_error(run, wait)
        else:
            assert watch.run is not None
            if watch.run.status == RunStatus.COMPLETED.value:
                async with watch.sessions() as session:
                    trace = await completion_trace(session, watch.run)
                yield chunk(ChunkDelta(metadata=trace), "stop")
                if answer.with_usage:
                    usage = completion_usage(watch.run.usage)
                    yield _sse(ChatCompletionUsageChunk(id=answer.id, created=answer.created,
                                                        model=answer.model, choices=[], usage=usage))  # fmt: skip
                yield b"data: [DONE]\n\n"
                return
            error = _failure(watch.run)
        extra = error.extra if isinstance(error.extra, dict) else {}
        yield _sse(openai_error(error.status_code, error.detail, **extra))


class OpenAIController(SignedInController):
    path = "/v1"
    tags = ["openai"]
    exception_handlers = EXCEPTION_HANDLERS

    @get("/models", operation_id="listModels", responses=error_responses())
    async def list_models(self, db_session: AsyncSession, current_user: User) -> ModelList:
        """Your agents (and the ones staff shared) as OpenAI models."""
        agents = await list_agents(db_session, current_user)
        return ModelList(data=[agent_model(agent, current_user) for agent in agents])

    @post(
        "/chat/completions",
        operation_id="createChatCompletion",
        status_code=200,
        operation_class=ChatCompletionOperation,
        responses={
            _STREAMED: ResponseSpec(
                ChatCompletionChunk,
                description="`stream: true`: server-sent events",
                media_type="text/event-stream",
                generate_examples=False,
            ),
            **error_responses(404, 409, 413, 429, 500, 503, 504),
        },
    )
    async def create_chat_completion(
        self,
        data: ChatCompletionRequest,
        db_session: AsyncSession,
        db_engine: AsyncEngine,
        current_user: User,
        channels: RealtimeChannels,
        settings: Settings,
    ) -> Response[ChatCompletion]:
        """Run the agent named by `model` on the last user message; the answer carries the
        run's trace in `choices[0].message.metadata`. `stream: true` answers with
        `chat.completion.chunk` events, then `data: [DONE]`."""
        await refuse_if_spent(db_session, current_user.id, settings)
        started = await start_completion(db_session, current_user, data)
        await commit_started(db_session)
        answer = _answer_of(started, data)
        watch = RunWatch(channels, sessions_for(db_engine), started.run.id, started.thread.id)
        wait = settings.completion_wait_seconds
        if data.stream:
            return Stream(  # type: ignore[return-value]
                _chunks(watch, started, answer, wait),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
            )
        async with watch:
            try:
                run = await watch.finished(wait)
            except WaitTimeout:
                raise timeout_error(started.run, wait) from None
        if run.status != RunStatus.COMPLETED.value:
            raise _failure(run)
        async with watch.sessions() as session:
            text = answer_text(await run_messages(session, run.id))
            trace = await completion_trace(session, run)
        message = CompletionMessage(content=text, metadata=trace)
        choice = CompletionChoice(message=message, finish_reason="stop")
        body = ChatCompletion(
            id=answer.id,
            created=answer.created,
            model=answer.model,
            choices=[choice],
            usage=completion_usage(run.usage),
        )
        return Response(body)
