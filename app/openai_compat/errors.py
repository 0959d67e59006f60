"""Every error of `/v1` in OpenAI's shape: `{"error": {message, type, param, code}}`.

OpenAI clients parse that shape (and not problem details), so this router converts what
the app's problem-details handlers answer. `x-should-retry: false` stops the official
clients' automatic retries (they retry 408, 409, 429 and 5xx): a retried completion would
start a second run, except after a 503 where nothing was stored.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from advanced_alchemy.exceptions import NotFoundError
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.plugins.problem_details import ProblemDetailsException
from sqlalchemy.exc import DBAPIError

from app.db.errors import PoolTimeoutError
from app.db.session import CommitFailedError
from app.lib.problems import ProblemException
from app.openai_compat.schemas import OpenAIError, OpenAIErrorBody

_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    504: "timeout_error",
}
_CODES = {
    401: "invalid_api_key",
    404: "not_found",
    413: "request_too_large",
    415: "unsupported_media_type",
}


def openai_error(
    status: int, message: str, *, code: str | None = None, param: str | None = None, **ids: Any
) -> OpenAIError:
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return OpenAIError(
        error=OpenAIErrorBody(
            message=message, type=kind, param=param, code=code or _CODES.get(status), **ids
        )
    )


def error_response(
    status: int, error: OpenAIError, headers: dict[str, str] | None = None
) -> Response[OpenAIError]:
    retry = "true" if status == 503 else "false"
    return Response(error, status_code=status, headers={**(headers or {}), "x-should-retry": retry})


class CompletionError(ProblemException):
    """A failure of a completion itself (timed out, run failed): its thread and run."""

    def __init__(self, status: int, message: str, code: str, **ids: Any) -> None:
        super().__init__(status, message, code=code, **{k: str(v) for k, v in ids.items()})


def _from_problem(content: Any, status: int) -> OpenAIError:
    problem = content if isinstance(content, dict) else {}
    errors = problem.get("errors") or []
    param = next((e.get("field") for e in errors if isinstance(e, dict)), None)
    message = problem.get("detail") or problem.get("title") or HTTPStatus(status).phrase
    ids = {k: problem[k] for k in ("thread_id", "run_id") if problem.get(k)}
    return openai_error(status, message, code=problem.get("code"), param=param, **ids)


def handle(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Answer as the app would (problem details), then reshape it for OpenAI clients."""
    handler = _app_handler(request, exc)
    problem = handler(request, exc)
    return error_response(
        problem.status_code,
        _from_problem(problem.content, problem.status_code),
        {
            k: v
            for k, v in problem.headers.items()
            if k.lower() in ("retry-after", "www-authenticate")
        },
    )


def _app_handler(request: Request[Any, Any, Any], exc: Exception) -> Any:
    handlers = request.app.exception_handlers
    for cls in type(exc).__mro__:
        if cls in handlers:
            return handlers[cls]
    raise exc


# The app-level handlers this router overrides (the problem-details plugin's keys).
EXCEPTION_HANDLERS = {
    kind: handle
    for kind in (
        HTTPException,
        ValidationException,
        ProblemDetailsException,
        NotFoundError,
        DBAPIError,
        CommitFailedError,
        PoolTimeoutError,
        OSError,
        Exception,
    )
}


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI: the error responses of an operation (400 and 401 always)."""
    return {
        code: ResponseSpec(
            OpenAIError, description=HTTPStatus(code).phrase, generate_examples=False
        )
        for code in sorted({400, 401, *statuses})
    }


def timeout_error(run: Any, seconds: float) -> CompletionError:
    """The wait for `run` ended after `seconds` (504); the run continues."""
    return CompletionError(
        504,
        f"The agent did not answer within {seconds:g} seconds. The run continues: its answer "
        f"will be in thread {run.thread_id} (GET /api/threads/{run.thread_id}/runs/{run.id}).",
        "timeout",
        thread_id=run.thread_id,
        run_id=run.id,
    )
