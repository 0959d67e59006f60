"""The tool contract: what a tool declares, the context it runs in, the result it returns.

A tool is a domain (`tasks`, `web`, …) taking `action` plus parameters. Each action's
parameters are a msgspec Struct; the JSON Schema given to the model is generated from them.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from uuid import UUID

import msgspec

from app.lib.problems import ProblemException
from app.lib.schema import Schema
from app.tools.errors import ErrorType, error_type_for_status
from app.tools.schema import action_fields, merged_parameters_schema, params_hint

if TYPE_CHECKING:
    import httpx
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    from app.db.models import Agent, User
    from app.settings import Settings
    from app.tools.unit import CallUnit


class ToolData(Schema, tag_field="type", kw_only=True):
    """A cell's `data`, one Struct per kind (`type`, its tag): a successful call's result,
    a running call's progress, a failed call's error (app/tools/results.py lists them all).

    A tool declares the Struct of each action in `Tool.results`; GET /api/tools publishes
    them per action and openapi/openapi.json has them as components of the union
    `ToolData`, so an app decodes a cell's `data` into a type. Built from these Structs,
    the data cannot drift from them. Fields every kind may carry are declared here;
    a new one must be optional (UNSET: left out), so old data still decodes.
    """

    # What the call streamed (`ctx.output`), first TOOL_OUTPUT_MAX_CHARS characters;
    # kept with the result or the error (app/threads/activity.py).
    output: str | msgspec.UnsetType = msgspec.UNSET
    # True once something was cut: the streamed output (a fetched page's text), or the
    # result itself, bounded to TOOL_RESULT_MAX_BYTES (app/tools/bounds.py).
    truncated: bool | msgspec.UnsetType = msgspec.UNSET
    # A bounded result: the size its JSON had before it was cut, in bytes.
    original_size: int | msgspec.UnsetType = msgspec.UNSET
    # A repeated call answered once (redundancy detection): the id of the call that ran.
    duplicate_of: str | msgspec.UnsetType = msgspec.UNSET


class ToolResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Success with data, or a self-correcting error the model can act on."""

    ok: bool
    data: dict[str, Any] | None = None
    display_message: str | None = None
    error: str | None = None
    error_type: ErrorType | None = None
    suggestion: str | None = None
    # allowed_actions, required_param, example, available_tools, errors (field by field)…
    details: dict[str, Any] | None = None
    duplicate: bool = False
    # Up to 3 short lines for the finished cell (`tool_activity.preview`); not for the model.
    preview: list[str] | None = None
    # What the model reads instead of `data` when set (an MCP result: its text, not both
    # the text and the structured content it repeats); the cell keeps `data`.
    model_data: dict[str, Any] | None = None

    @classmethod
    def success(
        cls, data: ToolData | dict[str, Any] | None = None, display_message: str | None = None
    ) -> ToolResult:
        if isinstance(data, ToolData):
            data = msgspec.to_builtins(data)
        return cls(ok=True, data=data or {}, display_message=display_message)

    @classmethod
    def failure(
        cls,
        error: str,
        error_type: ErrorType,
        suggestion: str | None = None,
        **details: Any,
    ) -> ToolResult:
        return cls(
            ok=False,
            error=error,
            error_type=error_type,
            suggestion=suggestion,
            details=details or None,
        )

    @classmethod
    def refused(
        cls, exc: ProblemException, suggestion: str | None = None, **details: Any
    ) -> ToolResult:
        """A domain service's refusal (the one the API answers with) as a self-correcting
        error: its detail, and its field errors when it has them."""
        extra = exc.extra if isinstance(exc.extra, dict) else {}
        if extra.get("errors"):
            details.setdefault("errors", extra["errors"])
        return cls.failure(
            exc.detail, error_type_for_status(exc.status_code), suggestion, **details
        )

    def as_duplicate(self, of: str = "") -> ToolResult:
        """The result of the call `of`, answering an identical later call: a success's
        `data.duplicate_of` names it and its cell says so (it did not run again)."""
        if not self.ok or not of:
            return msgspec.structs.replace(self, duplicate=True)
        said = f"Duplicate of {of}, not run again"
        shown = f"{said}: {self.display_message}" if self.display_message else said
        data = {**(self.data or {}), "duplicate_of": of}
        return msgspec.structs.replace(
            self, duplicate=True, data=data, display_message=shown, preview=None
        )

    def to_model_content(self, call: str | None = None) -> str:
        """Compact JSON for the tool message the model reads next; an error starts with
        `call` (preview.call_signature: `tasks(action=create, title="…"): …`)."""
        if self.ok:
            shown = self.model_data if self.model_data is not None else self.data
            body: dict[str, Any] = {"ok": True, **(shown or {})}
        else:
            error = f"{call}: {self.error}" if call else self.error
            body = {"type": "error", "ok": False, "error": error}
            body["error_type"] = self.error_type
            if self.suggestion:
                body["suggestion"] = self.suggestion
            body.update(self.details or {})
        if self.duplicate:
            body["duplicate"] = True
            body["note"] = "Identical call already made in this run; this is its result."
        return msgspec.json.encode(body).decode()


async def _no_progress(**_: Any) -> None:
    return None


async def _no_output(_: str) -> None:
    return None


async def _no_one_to_ask(_: dict[str, Any]) -> dict[str, Any] | None:
    return None


@dataclass
class ToolContext:
    """Everything a tool may use. Tenant ids come from here, never from model arguments."""

    user: User
    agent: Agent
    thread_id: UUID
    run_id: UUID
    tool_call_id: str
    session_factory: async_sessionmaker[AsyncSession]
    http: httpx.AsyncClient
    settings: Settings
    # await ctx.progress(display_message=…, data=…): updates this call's tool message.
    progress: Callable[..., Awaitable[None]] = _no_progress
    # await ctx.output(chunk): streams text to the app (a `tool_output` frame per chunk)
    # and into the cell's `data.output`, written coalesced like progress.
    output: Callable[[str], Awaitable[None]] = _no_output
    # await ctx.ask(request): the cell waits as `awaiting_input` showing `request` until the
    # user answers (the answer, a dict) or the wait expires (None); the tool's own timeout
    # is paused meanwhile. Outside a run there is no one to ask: None at once.
    ask: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]] = _no_one_to_ask
    # Per-run scratch shared by tools (e.g. the web search count).
    state: dict[str, Any] = field(default_factory=dict)
    # Set by the orchestrator: the unit of work commits with the call's cell (unit.py).
    unit: CallUnit | None = None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """The call's unit of work, owned by the caller: it commits when the block ends (or,
        run by the orchestrator, with the call's outcome) and rolls back when the block
        raises. Tools call domain services inside it and never commit themselves, so a
        refused change (raised by the service) leaves nothing."""
        if self.unit is not None:
            async with self.unit.transaction() as session:
                yield session
            return
        async with self.session_factory() as session, session.begin():
            yield session


def function_definition(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool as the chat-completions wire offers it to the model."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


class Tool:
    """Subclass per domain; register an instance in app/tools/runtime/registry.py."""

    name: ClassVar[str]
    description: ClassVar[str]
    actions: ClassVar[dict[str, type[msgspec.Struct]]]
    is_user_facing: ClassVar[bool] = True
    non_user_facing_actions: ClassVar[frozenset[str]] = frozenset()
    requires_confirmation: ClassVar[bool | frozenset[str]] = False
    # Actions without side effects: a later side-effecting call drops their cached results.
    read_only_actions: ClassVar[frozenset[str]] = frozenset()
    timeout_seconds: ClassVar[float] = 30
    # The Struct of each action's successful `data` (published in GET /api/tools).
    results: ClassVar[dict[str, type[ToolData]]] = {}
    # Shown in `required_param` errors: one example call per action.
    examples: ClassVar[dict[str, dict[str, Any]]] = {}
    # Added to every refusal of this tool's arguments, e.g. the fields it knows.
    validation_hints: ClassVar[dict[str, Any]] = {}
    # One line for GET /api/tools; None: derived from the JSON Schema.
    params_hint: ClassVar[str | None] = None
    # "server": its code runs here; "mcp": a remote MCP server runs it (app/tools/mcp/).
    executor: ClassVar[Literal["server", "mcp"]] = "server"
    mcp_server: ClassVar[str | None] = None  # the MCP server's name (executor "mcp")
    # The options a `tool_instances:` entry of the agent-types file may give this tool
    # (None: it takes none); an instance holds them in `self.options`.
    options_type: ClassVar[type[msgspec.Struct] | None] = None
    options: msgspec.Struct | None = None

    def configured(self, name: str, description: str | None, options: dict[str, Any]) -> Tool:
        """This tool under `name` with `options` (checked against `options_type`): a
        declared tool instance. Raises ValueError saying what is wrong."""
        if self.options_type is None:
            if options:
                raise ValueError(f"{self.name} takes no options")
            checked = None
        else:
            try:
                checked = msgspec.convert(options, self.options_type, strict=True)
            except msgspec.ValidationError as exc:
                raise ValueError(f"{self.name} options: {exc}") from None
        instance = copy.copy(self)
        instance.name = name  # type: ignore[misc]  (an instance's own name)
        instance.description = description or self.description  # type: ignore[misc]
        instance.options = checked
        return instance

    def check_arguments(
        self, args: dict[str, Any]
    ) -> tuple[str, msgspec.Struct] | ToolResult | None:
        """A tool described by a JSON Schema rather than action Structs (an MCP tool) checks
        the decoded arguments itself: (action, params) or a self-correcting error. None:
        the standard `action` + parameters validation (app/tools/validation.py)."""
        return None

    def start_message(self, action: str, params: msgspec.Struct) -> str | None:
        """What the cell says while the call runs, known before it starts: written with the
        in_progress cell itself instead of as a first `ctx.progress` (one write less)."""
        return None

    def preparing_message(self) -> str:
        """What the cell says while the model is still writing the call (`preparing`):
        nothing of its arguments is known yet, not even the action."""
        return f"Preparing {self.name}…"

    async def run(self, ctx: ToolContext, action: str, params: msgspec.Struct) -> ToolResult:
        handler = getattr(self, f"{action}_action", None)
        if handler is None:  # pragma: no cover - guarded by validation
            return ToolResult.failure(f"Invalid action {action!r}", "validation_error")
        return await handler(ctx, params)

    def parameters_schema(self) -> dict[str, Any]:
        return merged_parameters_schema(self.actions)

    def parameters_hint(self) -> str:
        return self.params_hint or params_hint(self.parameters_schema())

    def result_preview(self, action: str, result: ToolResult) -> list[str] | None:
        """Up to 3 short lines summarising a finished call; None: derived generically."""
        return None

    def function_definition(self) -> dict[str, Any]:
        return function_definition(self.name, self.description, self.parameters_schema())

    def needs_confirmation(self, action: str | None) -> bool:
        if isinstance(self.requires_confirmation, bool):
            return self.requires_confirmation
        return action in self.requires_confirmation

    def is_user_facing_call(self, action: str | None) -> bool:
        return self.is_user_facing and action not in self.non_user_facing_actions

    def example_call(self, action: str) -> dict[str, Any]:
        return {"action": action, **self.examples.get(action, {})}

    def required_params(self, action: str) -> list[str]:
        return [name for name, required in action_fields(self.actions[action]).items() if required]

    def no_argument_action(self) -> str | None:
        """What a call by the tool's name alone runs (request `tool_calls: ["tasks"]`): its
        one read-only action that needs no parameter (tasks: list), else None. Read-only
        only: a bare name must never create or change anything."""
        candidates = [
            action
            for action in self.actions
            if action in self.read_only_actions and not self.required_params(action)
        ]
        return candidates[0] if len(candidates) == 1 else None
