"""Log lines: text (the default) or one JSON object per line, each with its request id.

Litestar's `LoggingConfig` configures the root logger (so `app.*`, `litestar` and uvicorn's
loggers all write through one handler); only the formatter changes between the formats,
and the request-id and query-secret filters (query_secrets.py) sit on that handler, where
records are still handled in the task that logged them (the queue behind it formats in
another thread).

The access log is the app's own (`AccessLog`, logger `app.access`), not uvicorn's: one line
per HTTP request once its response is sent, with the request's duration, and in JSON its
fields apart (`method`, `path`, `query`, `status`, `duration_ms`, `client`,
`http_version`) rather than one string to parse. uvicorn's access logger stays quiet.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any, cast

import msgspec
from litestar.logging.config import LoggingConfig
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send

from app.observability.query_secrets import QuerySecretFilter, redact_query_secrets
from app.observability.request_id import RequestIdFilter, request_id_of
from app.settings import Settings

TEXT_FORMAT = "%(levelname)s - %(asctime)s - %(name)s - [%(request_id)s] %(message)s"
# Attributes every LogRecord has; anything else was passed as `extra=` and is kept.
# (uvicorn's `color_message` is its message with terminal colours: noise in JSON.)
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "color_message",
}
_encode = msgspec.json.Encoder(enc_hook=str).encode


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", "request_id", …extra, "exception"?}`."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        line.update(
            (key, value)
            for key, value in vars(record).items()
            if key not in _RECORD_ATTRIBUTES and key not in line
        )
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return _encode(line).decode()


# uvicorn's lines about what a client sent wrong, logged as errors with a traceback: any
# client could fill the error log with them. One WARNING line each, without the traceback.
CLIENT_FAULTS = frozenset({"Invalid UTF-8 sequence received from client."})


class ClientFaultFilter(logging.Filter):
    """Turns uvicorn's records of a client's bad input into one warning line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg in CLIENT_FAULTS and record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


ACCESS_LOGGER = "app.access"
access_logger = logging.getLogger(ACCESS_LOGGER)


class AccessLog:
    """Wraps the app's ASGI handler (outside routing, so a 404 of the router is logged
    too): per HTTP request, once its last body part is sent (or it failed), one INFO line
    `client - "METHOD /path?query HTTP/1.1" status duration ms`, its parts as fields."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None
        logged = False

        def log() -> None:
            nonlocal logged
            if not logged:
                logged = True
                _log_access(cast("HTTPScope", scope), status or 500, started)

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                log()

        try:
            await self.app(scope, receive, observed_send)
        finally:
            log()  # no complete response: it failed (500 unless it had begun one)


def _log_access(scope: HTTPScope, status: int, started: float) -> None:
    if not access_logger.isEnabledFor(logging.INFO):
        return
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    client = scope.get("client")
    client_text = f"{client[0]}:{client[1]}" if client else "-"
    query = redact_query_secrets("?" + scope.get("query_string", b"").decode("latin-1"))[1:]
    target = f"{scope['path']}?{query}" if query else scope["path"]
    version = scope.get("http_version", "1.1")
    access_logger.info(
        '%s - "%s %s HTTP/%s" %d %.1fms',
        client_text,
        scope["method"],
        target,
        version,
        status,
        duration_ms,
        extra={
            "method": scope["method"],
            "path": scope["path"],
            "query": query,
            "status": status,
            "duration_ms": duration_ms,
            "client": client_text,
            "http_version": version,
            "request_id": request_id_of(scope),
        },
    )


def _formatter(settings: Settings) -> dict[str, Any]:
    if settings.log_format == "json":
        return {"()": JsonFormatter}
    return {"format": TEXT_FORMAT}


def logging_config(settings: Settings) -> LoggingConfig:
    level = settings.log_level.upper()
    through_root = {"level": level, "handlers": ["queue_listener"], "propagate": False}
    config = LoggingConfig(
        formatters={"standard": _formatter(settings)},
        filters={
            "request_id": {"()": RequestIdFilter},
            "query_secrets": {"()": QuerySecretFilter},
            "client_faults": {"()": ClientFaultFilter},
        },
        root={"handlers": ["queue_listener"], "level": level},
        loggers={
            "litestar": through_root,
            # the app's access lines (AccessLog) replace uvicorn's, which lack the duration
            ACCESS_LOGGER: {**through_root, "level": "INFO" if settings.access_log else "WARNING"},
            "uvicorn.access": {**through_root, "level": "WARNING"},
            # uvicorn's error lines in the same format, with the request id
            "uvicorn.error": {**through_root, "level": "INFO", "filters": ["client_faults"]},
        },
    )
    config.handlers["queue_listener"] = {
        **config.handlers["queue_listener"],
        "filters": ["request_id", "query_secrets"],
    }
    return config
