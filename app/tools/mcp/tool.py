"""A remote MCP tool as one of ours: `McpTool` is a `Tool`, so validation, approval,
budgets, the per-run duplicate check, the cell and the run trace treat it like a builtin.

Its arguments are checked against the server's JSON Schema (a self-correcting
`validation_error` before anything is sent); its "action" is the remote tool's name, so
the cell's `input` reads `{"action": "<remote tool>", …arguments}`. The call reports the
server's progress notifications as the cell's `display_message` and `data.progress` /
`data.total`; the result's `structuredContent` becomes `data` (`type: "mcp_result"`), its
text the preview and what the model reads.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import mcp.types as mcp_types
import msgspec

from app.attachments.schemas import AttachmentRead
from app.tools.base import Tool, ToolContext, ToolData, ToolResult
from app.tools.json_schema import invalid_arguments
from app.tools.mcp.connect import StatusWatch, connect, describe_failure
from app.tools.mcp.credentials import CREDENTIALS
from app.tools.mcp.elicitation import Elicitation
from app.tools.mcp.images import store_images
from app.tools.mcp.naming import tool_name
from app.tools.mcp_config import McpServerSpec
from app.tools.results import ToolProgress
from app.tools.schema import params_hint

logger = logging.getLogger("app.tools.mcp")
# The cell's words for the same expiry (app/threads/activity.py), said to the model too.
INPUT_EXPIRED = "No one answered the request for input in time."
MAX_TEXT_CHARS = 20_000  # what the model reads of a result's text (like a fetched page)


class McpToolResult(ToolData, tag="mcp_result", kw_only=True, omit_defaults=True):
    """A remote MCP tool's successful result: its `structuredContent` (any JSON, shaped by
    the tool's own output schema) and its text content."""

    server: str
    tool: str
    structured_content: Any = None
    text: str | None = None
    # Images the tool returned, kept as your attachments (`GET /api/attachments/{id}/…`).
    images: list[AttachmentRead] | None = None


class RemoteArguments(msgspec.Struct):
    """Stands for the remote schema in the catalog's per-action listing (checked against
    the JSON Schema itself, `McpTool.check_arguments`)."""


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema as providers take it (an object with properties)."""
    if schema.get("type") != "object":
        return {"type": "object", "properties": {}}
    return {"properties": {}, **schema}


class McpTool(Tool):
    """One tool of one server; built from its `tools/list` entry."""

    def __init__(self, spec: McpServerSpec, remote: mcp_types.Tool) -> None:
        self.spec, self.remote = spec, remote.name
        self.name = tool_name(spec.name, remote.name)  # type: ignore[misc]
        about = remote.description or remote.title or remote.name
        self.description = f"{about} (MCP server {spec.name})"  # type: ignore[misc]
        self.schema = _object_schema(remote.input_schema)
        self.actions = {remote.name: RemoteArguments}  # type: ignore[misc]
        self.results = {remote.name: McpToolResult}  # type: ignore[misc]
        self.is_user_facing = spec.is_user_facing  # type: ignore[misc]
        self.requires_confirmation = spec.needs_confirmation(remote.name)  # type: ignore[misc]
        read_only = bool(remote.annotations and remote.annotations.read_only_hint)
        self.read_only_actions = frozenset({remote.name} if read_only else ())  # type: ignore[misc]
        self.timeout_seconds = spec.timeout_seconds  # type: ignore[misc]
        self.mcp_server = spec.name  # type: ignore[misc]

    executor = "mcp"

    def parameters_schema(self) -> dict[str, Any]:
        return self.schema

    def parameters_hint(self) -> str:
        return params_hint(self.schema)

    def required_params(self, action: str) -> list[str]:
        return [str(name) for name in self.schema.get("required") or []]

    def check_arguments(self, args: dict[str, Any]) -> tuple[str, msgspec.Struct] | ToolResult:
        """The arguments against the server's schema. An `action` naming the tool itself
        (a call by the tool's name alone) is dropped unless the schema has one."""
        properties = self.schema.get("properties") or {}
        if "action" not in properties and args.get("action") == self.remote:
            args = {k: v for k, v in args.items() if k != "action"}
        invalid = invalid_arguments(self.name, self.schema, args)
        if invalid is not None:
            return invalid
        # The arguments as they are (a plain dict is what the executor's input, duplicate
        # key and this tool's `run` read; no Struct can describe an arbitrary schema).
        return self.remote, cast(msgspec.Struct, args)

    def start_message(self, action: str, params: msgspec.Struct) -> str | None:
        return f"Calling {self.remote} on {self.spec.name}…"

    def preparing_message(self) -> str:
        return f"Preparing {self.remote} on {self.spec.name}…"

    async def run(self, ctx: ToolContext, action: str, params: msgspec.Struct) -> ToolResult:
        arguments = cast(dict[str, Any], params)
        watch = StatusWatch()
        bearer = await bearer_for(ctx, self.spec) if self.spec.per_user else None
        if isinstance(bearer, ToolResult):
            return bearer

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            data = ToolProgress(progress=progress, total=total)
            await ctx.progress(
                display_message=message or _progress_text(progress, total), data=data
            )

        asking = Elicitation(ctx, self.spec.name, self.remote)
        try:
            try:
                result = await self._call(arguments, watch, bearer, asking, on_progress)
            except Exception:
                renewed = await self._renewed(ctx, watch, asking)
                if renewed is None:
                    raise
                watch = StatusWatch()
                result = await self._call(arguments, watch, renewed, asking, on_progress)
        except Exception as exc:
            if _being_cancelled():  # the SDK's streams may raise their own error instead
                raise asyncio.CancelledError from exc
            if asking.expired:
                return _input_expired(self.spec.name)
            return self._transport_failure(exc, watch)
        if asking.expired:  # the server was told `cancel`; the call timed out on the user
            return _input_expired(self.spec.name)
        images, notes = await store_images(ctx, self.spec.name, self.remote, result)
        return self.result(result, images, notes)

    async def _call(
        self,
        arguments: dict[str, Any],
        watch: StatusWatch,
        bearer: str | None,
        asking: Elicitation,
        on_progress: Any,
    ) -> mcp_types.CallToolResult:
        async with connect(self.spec, watch, bearer=bearer, elicitation=asking) as client:
            return await client.call_tool(self.remote, arguments, progress_callback=on_progress)

    async def _renewed(
        self, ctx: ToolContext, watch: StatusWatch, asking: Elicitation
    ) -> str | None:
        """A per-user OAuth token the server refused (401) before the tool ran: refreshed
        once, for one more try (the refused request never reached the tool)."""
        if watch.denied != 401 or not self.spec.per_user or asking.asked:
            return None
        credentials = CREDENTIALS.provider
        if credentials.off_reason(ctx.settings) is not None:
            return None
        return await credentials.token(ctx, self.spec.name, refused=True)

    def _transport_failure(self, exc: BaseException, watch: StatusWatch) -> ToolResult:
        if watch.denied is not None:
            return ToolResult.failure(
                f"The MCP server {self.spec.name} refused the credentials (HTTP "
                f"{watch.denied}): the connection needs to be renewed.",
                "permission_error",
                suggestion="Tell the user the connection to this service needs renewing.",
                server=self.spec.name,
            )
        if watch.too_large is not None:
            return ToolResult.failure(
                f"{self.remote} on {self.spec.name} answered more than "
                f"{_megabytes(watch.too_large)}: the answer was not read.",
                "system_error",
                suggestion="Ask for less (a narrower query, fewer rows), or answer "
                "without this tool.",
                server=self.spec.name,
            )
        reason = describe_failure(exc)
        logger.warning("mcp %s.%s failed: %s", self.spec.name, self.remote, reason)
        return ToolResult.failure(
            f"{self.name} failed: {reason}.",
            "system_error",
            suggestion="Try again later, or answer without this tool.",
            server=self.spec.name,
        )

    def result(
        self,
        result: mcp_types.CallToolResult,
        images: list[AttachmentRead] | None = None,
        notes: list[str] | None = None,
    ) -> ToolResult:
        text = "\n".join(part for part in (_text_of(result), *(notes or [])) if part)
        if result.is_error:
            return ToolResult.failure(
                text or f"{self.remote} reported an error.",
                "user_error",
                suggestion="Read the error, correct the arguments and call it again.",
                server=self.spec.name,
            )
        data = McpToolResult(
            server=self.spec.name,
            tool=self.remote,
            structured_content=result.structured_content,
            text=text[:MAX_TEXT_CHARS] or None,
            images=images or None,
        )
        if len(text) > MAX_TEXT_CHARS:  # the rest of the result is bounded by the executor
            data = msgspec.structs.replace(data, truncated=True)
        success = ToolResult.success(data)
        if text:  # the model reads the text; the structured content stays in the cell
            shown = msgspec.structs.replace(data, structured_content=None)
            success = msgspec.structs.replace(success, model_data=msgspec.to_builtins(shown))
        return success

    def result_preview(self, action: str, result: ToolResult) -> list[str] | None:
        """The structured content's first fields (`total: 12`), else the text's lines."""
        data = result.data or {}
        structured = data.get("structured_content")
        if isinstance(structured, dict) and structured:
            return [f"{key}: {_compact(value)}" for key, value in list(structured.items())[:3]]
        lines = [line.strip() for line in str(data.get("text") or "").splitlines()]
        return [line for line in lines if line][:3] or None


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):g} MB"


def _compact(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_compact(item) for item in value)
    if isinstance(value, dict):
        return msgspec.json.encode(value).decode()
    return str(value)


async def bearer_for(ctx: ToolContext, spec: McpServerSpec) -> str | ToolResult:
    """The run's user's own token for a per-user server: only that user's runs use it
    (an expired OAuth access token is refreshed first)."""
    credentials = CREDENTIALS.provider
    off = credentials.off_reason(ctx.settings)
    if off is not None:
        return ToolResult.failure(off, "system_error", server=spec.name)
    token = await credentials.token(ctx, spec.name)
    if token is None:
        return ToolResult.failure(
            f"{spec.name} is not connected for this user (or its connection needs renewing).",
            "permission_error",
            suggestion=f"Tell the user to connect {spec.name} in the app first.",
            server=spec.name,
        )
    return token


def _input_expired(server: str) -> ToolResult:
    return ToolResult.failure(
        INPUT_EXPIRED,
        "timeout",
        suggestion="Ask the user in the chat, or call it again when they are there.",
        server=server,
    )


def _being_cancelled() -> bool:
    """This task was cancelled (a run's cancel, the executor's timeout): the call must end
    as `cancelled` / `timeout`, whatever the connection raised while it was torn down."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _progress_text(progress: float, total: float | None) -> str:
    if total:
        return f"{progress:g} of {total:g}"
    return f"{progress:g} done"


def _text_of(result: mcp_types.CallToolResult) -> str:
    """The text blocks of a result; other kinds (images, audio, resources) are named."""
    parts = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type}]")
    return "\n".join(parts)
