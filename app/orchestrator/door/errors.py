"""Provider failures as the provider sent them: status, error type and message, in words.

Every client reduces a failure to (status, type, message, retry-after) and `from_status`
words it, so a run's `error` reads the same whichever client called: a lead the user
understands, then what the provider said, e.g. "The model provider is overloaded; try
again in a minute. (529 overloaded_error: Overloaded)". Keys never reach these texts
(`scrub`): providers sometimes echo part of a rejected key.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

TRANSIENT = frozenset({"rate_limit", "overloaded", "provider_unavailable", "timeout", "connection"})
_CONTEXT_WORDS = ("context length", "context_length", "context window", "too many tokens",
                  "prompt is too long", "maximum context")  # fmt: skip
_DETAIL_CHARS = 300


class LLMError(Exception):
    """A model failure with a message fit for `run.error`."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind, self.message, self.retry_after = kind, message, retry_after
        self.status, self.error_type = status, error_type

    @property
    def transient(self) -> bool:
        return self.kind in TRANSIENT

    def __str__(self) -> str:
        return self.message


def from_status(
    status: int | None,
    error_type: str | None,
    message: str,
    *,
    retry_after: float | None = None,
) -> LLMError:
    """The run error for a provider's answer: classified by its status (and type, for
    providers that say "overloaded" or "context length" under a plain 400/500)."""
    detail = _detail(status, error_type, message)
    kind, lead = _classify(status, (error_type or "").lower(), message.lower())
    return LLMError(
        kind, f"{lead} ({detail})", retry_after=retry_after, status=status, error_type=error_type
    )


def _classify(status: int | None, error_type: str, message: str) -> tuple[str, str]:
    if status in {529, 503} or "overloaded" in error_type:
        return "overloaded", "The model provider is overloaded; try again in a minute."
    if status == 429 or "rate_limit" in error_type or "resource_exhausted" in error_type:
        return "rate_limit", "The model provider is rate limiting; try again shortly."
    if status in {401, 403} or "authentication" in error_type or "permission" in error_type:
        return "auth", "The model provider rejected the API key (authentication failed)."
    if status in {400, 413, 422} and any(word in message for word in _CONTEXT_WORDS):
        return "context_window", "The conversation is too long for the model."
    if status == 404:
        return "model_not_found", "The model was not found."
    if status == 408:
        return "timeout", "The model did not answer in time."
    if status is not None and 400 <= status < 500:
        return "bad_request", "The model provider refused the request."
    return "provider_unavailable", "The model provider failed."


def _detail(status: int | None, error_type: str | None, message: str) -> str:
    head = " ".join(str(part) for part in (status, error_type) if part)
    text = " ".join(message.split())[:_DETAIL_CHARS] or "no message"
    return f"{head}: {text}" if head else text


def read_error_body(raw: str | bytes) -> tuple[str | None, str, int | None]:
    """(type, message, status) of a provider's JSON error body, whatever its shape:
    OpenAI `{"error": {"message", "type", "code"}}`, Anthropic `{"type": "error", "error":
    {"type", "message"}}`, Gemini `{"error": {"code", "message", "status"}}`, Groq's
    in-stream `{"error": {…, "status_code"}}`; not JSON: the text itself."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    try:
        body = json.loads(text)
    except ValueError:
        return None, text.strip(), None
    return error_fields(body)


def error_fields(body: Any) -> tuple[str | None, str, int | None]:
    """(type, message, status) of a decoded error object or body (see `read_error_body`)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, list) and error:  # Gemini sometimes wraps the body in a list
        return error_fields(error[0])
    if not isinstance(error, dict):
        return None, str(error), None
    message = error.get("message")
    kind = error.get("type") or error.get("status")
    code = error.get("code")
    status = error.get("status_code")
    if not isinstance(status, int) and isinstance(code, int):
        status = code
    if not kind and isinstance(code, str):
        kind = code  # Groq: "tool_use_failed"
    return (
        str(kind) if kind else None,
        message if isinstance(message, str) else json.dumps(error)[:_DETAIL_CHARS],
        status if isinstance(status, int) and 100 <= status < 600 else None,
    )


_BYTES_REPR = re.compile(r"b(['\"]).*\1", re.S)


def body_in_text(text: str) -> tuple[str | None, str, int | None] | None:
    """A JSON error body found inside an exception's text (litellm prefixes it with
    "AnthropicException - ", sometimes as a `b'…'` repr): its fields, or None."""
    if (found := _BYTES_REPR.search(text)) is not None:
        try:
            value = ast.literal_eval(found.group(0))
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, bytes):
            text = value.decode("utf-8", "replace")
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        body = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return error_fields(body)


def retry_after_seconds(headers: Any) -> float | None:
    """`retry-after` (seconds; an HTTP date is not followed) or `retry-after-ms`."""
    if not headers or not hasattr(headers, "get"):
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name) or headers.get(name.title())
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) * scale)
        except ValueError:
            continue
    return None


def scrub(text: str, *secrets: str | None) -> str:
    """`text` without any of `secrets` in it (a key echoed back in an error)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
