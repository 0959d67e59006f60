"""Secrets in request targets never reach a log line.

A phone opens `/api/ws?token=…` (a websocket handshake cannot always carry a header), and
the MCP OAuth callback arrives with `?code=…&state=…`; uvicorn writes each request target
whole, into its access line and its websocket line. `QuerySecretFilter`, on the one
handler every logger writes through (app/observability/logs.py), replaces the value of
each such query parameter with `REDACTED` before the line is formatted.

litellm, once imported, hangs redaction filters of its own on uvicorn's loggers, so these
lines happened to be scrubbed already; that is a side effect of another library's import,
which can change with any of its releases, so the app does not rely on it (the test runs
the server with litellm's redaction switched off).
"""

from __future__ import annotations

import logging
import re

# Query parameters whose values are credentials (or exchangeable for one).
SECRET_PARAMETERS = (
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "apikey",
    "key",
    "password",
    "secret",
    "client_secret",
    "code",
    "signature",
    "sig",
)
_NAMES = "|".join(SECRET_PARAMETERS)
_SECRET_VALUE = re.compile(rf"([?&](?:{_NAMES})=)[^&#\s\"']*", re.IGNORECASE)
REDACTED = r"\1REDACTED"


def redact_query_secrets(text: str) -> str:
    if "?" not in text or "=" not in text:  # no query string: the common case, no regex
        return text
    return _SECRET_VALUE.sub(REDACTED, text)


class QuerySecretFilter(logging.Filter):
    """Scrubs secret query values from a record's message and its string arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_query_secrets(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_query_secrets(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True
