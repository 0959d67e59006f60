"""RFC 9457 problem details for every error the API can answer with."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any
from uuid import UUID

import msgspec
from advanced_alchemy.exceptions import NotFoundError
from litestar import Request, Response
from litestar.config.app import AppConfig
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.plugins.problem_details import (
    ProblemDetailsConfig,
    ProblemDetailsException,
    ProblemDetailsPlugin,
)
from sqlalchemy.exc import DBAPIError

from app.db.errors import PoolTimeoutError, is_database_unavailable
from app.db.session import CommitFailedError
from app.lib.validation import friendly_message, struct_field_errors

logger = logging.getLogger(__name__)
PROBLEM_MEDIA_TYPE = "application/problem+json"


class FieldError(msgspec.Struct, kw_only=True):
    field: str | None
    message: str
    source: str | None = None


class ProblemDetail(msgspec.Struct, kw_only=True):
    """An RFC 9457 problem: `errors` lists field-level validation failures."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    errors: list[FieldError] | None = None
    active_run_id: UUID | None = None  # a 409 of a thread still working: its run


class ProblemException(HTTPException):
    """Raise to answer with a problem; `extra` members land at the top level."""

    def __init__(self, status_code: int, detail: str, **extra: Any) -> None:
        super().__init__(detail=detail, status_code=status_code, extra=extra or None)


def _as_field_errors(items: list[Any]) -> list[dict[str, Any]]:
    """Litestar's validation messages (`key`, `message`, `source`) as problem `errors`."""
    return [
        {
            "field": item.get("key"),
            "message": friendly_message(item.get("message", "")),
            "source": item.get("source"),
        }
        for item in items
        if isinstance(item, dict)
    ]


def _field_errors(exc: HTTPException) -> list[dict[str, Any]] | None:
    if not isinstance(exc, ValidationException) or not isinstance(exc.extra, list):
        return None
    return _as_field_errors(exc.extra)


def _problem(status: int, detail: str | None, **members: Any) -> ProblemDetailsException:
    extra = {k: v for k, v in members.items() if v is not None}
    return ProblemDetailsException(
        status_code=status,
        type_="about:blank",
        title=HTTPStatus(status).phrase,
        detail=detail or "",
        extra=extra or None,
    )


def _from_http_exception(exc: HTTPException) -> ProblemDetailsException:
    status = exc.status_code
    extra = dict(exc.extra) if isinstance(exc.extra, dict) else {}
    detail = exc.detail if exc.detail != HTTPStatus(status).phrase else None
    # A ProblemException may carry its own `errors`; validation errors come from Litestar.
    errors = extra.pop("errors", None) or _field_errors(exc)
    problem = _problem(status, detail, errors=errors, **extra)
    problem.headers = exc.headers
    return problem


def _from_not_found(_exc: NotFoundError) -> ProblemDetailsException:
    return _problem(404, "Not found")


def _from_database_error(exc: DBAPIError) -> ProblemDetailsException:
    if is_database_unavailable(exc):
        return _from_database_unavailable(exc)
    # SQLSTATE class 22 is "data exception": a value the database cannot store (a NUL
    # character in text or JSON on PostgreSQL, an out-of-range number). That is the
    # client's input, so a 400; anything else is ours.
    sqlstate = str(getattr(exc.orig, "sqlstate", None) or "")
    if sqlstate.startswith("22"):
        return _problem(
            400, "A value in the request cannot be stored (for example a NUL character)."
        )
    return _from_unexpected(exc)


# Seconds a client should wait before retrying a request the database could not take.
DATABASE_RETRY_AFTER_SECONDS = 2


def _from_database_unavailable(exc: Exception) -> ProblemDetailsException:
    """The database could not take the request (its COMMIT failed, it is unreachable, or
    the connection pool stayed exhausted): a 503 to retry, never a 2xx or a 500."""
    logger.warning("database unavailable: %r", exc, exc_info=exc)
    problem = _problem(503, "The database is unavailable; please retry.")
    problem.headers = {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}
    return problem


def _from_unexpected(exc: Exception) -> ProblemDetailsException:
    # asyncpg raises its own errors unwrapped while connecting (e.g. "starting up").
    if is_database_unavailable(exc):
        return _from_database_unavailable(exc)
    # Never leak a stack trace or internals; the log has the details.
    logger.error("unhandled error", exc_info=exc)
    return _problem(500, "An unexpected error occurred.")


def _body_field_errors(request: Request, exc: ValidationException) -> list[dict[str, Any]]:
    """Every bad field of the JSON body, when the body is what failed (msgspec, and so
    Litestar, report only the first)."""
    if not isinstance(exc.extra, list) or not any(
        isinstance(item, dict) and item.get("source") == "body" for item in exc.extra
    ):
        return []
    data = request.route_handler.parsed_fn_signature.parameters.get("data")
    struct_type = data.annotation if data else None
    if not (isinstance(struct_type, type) and issubclass(struct_type, msgspec.Struct)):
        return []
    raw = getattr(request, "decoded_json", None)
    return struct_field_errors(struct_type, raw)


def _validation_detail(errors: list[dict[str, Any]]) -> str | None:
    """One line naming each bad field: "due_at must include a timezone; name: Expected …"."""
    parts = [
        f"{e['field']} {e['message']}"
        if e["message"][:1].islower()
        else f"{e['field']}: {e['message']}"
        for e in errors
        if e.get("field")
    ]
    return f"Invalid request: {'; '.join(parts)}." if parts else None


def _validation_problem(request: Request, exc: ValidationException) -> Response[Any]:
    errors = _field_errors(exc) or []
    if body_errors := _body_field_errors(request, exc):
        errors = [e for e in errors if e["source"] != "body"] + _as_field_errors(body_errors)
    problem = _problem(400, _validation_detail(errors) or exc.detail, errors=errors or None)
    return problem.to_response(request)


class _ProblemDetailsPlugin(ProblemDetailsPlugin):
    """Validation problems need the request (its body and handler) to list every bad
    field, which the exception-to-problem map's one-argument functions do not get."""

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config = super().on_app_init(app_config)
        app_config.exception_handlers[ValidationException] = _validation_problem
        return app_config


def problem_details_plugin() -> ProblemDetailsPlugin:
    return _ProblemDetailsPlugin(
        ProblemDetailsConfig(
            exception_to_problem_detail_map={
                HTTPException: _from_http_exception,
                NotFoundError: _from_not_found,
                DBAPIError: _from_database_error,
                CommitFailedError: _from_database_unavailable,
                PoolTimeoutError: _from_database_unavailable,
                # A connection that cannot be made surfaces as the socket's OSError.
                OSError: _from_database_unavailable,
                Exception: _from_unexpected,
            }
        )
    )


def problem_spec(description: str) -> ResponseSpec:
    return ResponseSpec(
        data_container=ProblemDetail,
        description=description,
        media_type=PROBLEM_MEDIA_TYPE,
        generate_examples=False,
        examples=None,
    )


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """Document the problem responses an operation can give (400 and 401 always)."""
    codes = sorted({400, 401, *statuses})
    return {code: problem_spec(HTTPStatus(code).phrase) for code in codes}


__all__ = ("ProblemDetail", "ProblemException", "problem_details_plugin", "problems")
