"""Log lines: text (the default) or one JSON object per line, each with its request id.

Litestar's `LoggingConfig` configures the root logger (so `app.*`, `litestar` and uvicorn's
loggers all write through one handler); only the formatter changes between the formats,
and the request-id and query-secret filters (query_secrets.py) sit on that handler, where
records are still handled in the task that logged them (the queue behind it formats in
another thread).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar.logging.config import LoggingConfig

from app.observability.query_secrets import QuerySecretFilter
from app.observability.request_id import RequestIdFilter
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
            # uvicorn's access and error lines in the same format, with the request id
            "uvicorn.access": {
                **through_root,
                "level": "INFO" if settings.access_log else "WARNING",
            },
            "uvicorn.error": {**through_root, "level": "INFO", "filters": ["client_faults"]},
        },
    )
    config.handlers["queue_listener"] = {
        **config.handlers["queue_listener"],
        "filters": ["request_id", "query_secrets"],
    }
    return config
