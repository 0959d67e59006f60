"""Log lines of a real server process: JSON when LOG_FORMAT=json, each with its request id;
tool events are not logged at INFO. (A process of its own: logging is configured per process.)"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError

from app.observability.logs import ACCESS_LOGGER, AccessLog, JsonFormatter, logging_config
from app.observability.query_secrets import QuerySecretFilter
from app.observability.request_id import RequestIdFilter
from app.settings import PROJECT_ROOT, Settings
from app.tools.base import ToolResult
from app.tools.events import LoggingToolEvents, ToolCall
from tests.support.databases import migrate, sqlite_url
from tests.support.processes import free_port, until, wait_ready
from tests.support.sync_db import seed_user


def start(url: str, log: Path, **env: str) -> tuple[subprocess.Popen[bytes], int]:
    """A server on `url` (no runner) writing its output to `log`, with `env` on top of
    ours; and its port."""
    port = free_port()
    environment = {**os.environ, "DATABASE_URL": url, "RUNNER_ENABLED": "0", **env}
    with log.open("wb") as out:
        command = [sys.executable, "-m", "uvicorn", "app:create_app", "--factory"]
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, port


async def test_json_log_lines_carry_the_request_id(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    migrate(url)
    log = tmp_path / "server.log"
    process, port = start(
        url,
        log,
        LOG_FORMAT="json",
        REDIS_URL="redis://127.0.0.1:1/0",  # unreachable: readiness logs a warning
        CHANNELS_PREFIX="test-logs:",
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await wait_ready(http)
            response = await http.get("/api/health/ready", headers={"X-Request-ID": "trace-me-1"})
            assert response.status_code == 503
            assert response.headers["X-Request-ID"] == "trace-me-1"

            def lines() -> list[dict]:
                text = log.read_text()
                return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

            def mine() -> list[dict]:
                return [line for line in lines() if line.get("request_id") == "trace-me-1"]

            unknown = await http.get("/api/nowhere?limit=5&token=t-1")  # the router's 404
            assert unknown.status_code == 404

            async def logged() -> bool:
                loggers = {line["logger"] for line in mine()}
                paths = {line.get("path") for line in lines() if line["logger"] == "app.access"}
                return {"app.realtime.channels", "app.access"} <= loggers and (
                    "/api/nowhere" in paths
                )

            await until(logged, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=30)
    (warning,) = [line for line in mine() if line["logger"] == "app.realtime.channels"]
    assert warning["level"] == "WARNING"
    assert warning["message"] == "readiness: Redis unavailable"
    assert "Traceback" in warning["exception"]
    # the access line: its parts as fields, the duration included; uvicorn's is not written
    (access,) = [line for line in mine() if line["logger"] == "app.access"]
    assert access["level"] == "INFO"
    assert (access["method"], access["path"], access["query"]) == ("GET", "/api/health/ready", "")
    assert access["status"] == 503 and access["http_version"] == "1.1"
    assert isinstance(access["duration_ms"], float) and access["duration_ms"] >= 0
    assert access["client"].startswith("127.0.0.1:")
    assert access["message"].endswith(
        f'"GET /api/health/ready HTTP/1.1" 503 {access["duration_ms"]:.1f}ms'
    )
    (unknown_line,) = [
        line for line in lines() if line.get("path") == "/api/nowhere"
    ]  # answered by the router, outside every route's middleware: logged all the same
    assert unknown_line["status"] == 404 and unknown_line["query"] == "limit=5&token=REDACTED"
    assert not [line for line in lines() if line["logger"] == "uvicorn.access"]
    assert all(line["time"].endswith("+00:00") for line in lines())
    # every line the server wrote is one JSON object
    text_lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert all(line.startswith("{") for line in text_lines), text_lines[:5]


async def test_an_invalid_utf8_frame_is_one_warning_line_without_a_traceback(
    tmp_path: Path,
) -> None:
    """Any client can send bad bytes: the log gets one line per socket, not an ERROR with a
    traceback (uvicorn logs it so), and the client gets 1007."""
    url, token = sqlite_url(tmp_path), "tc_logs_utf8_token_not_secret"
    migrate(url)
    await asyncio.to_thread(seed_user, url, "utf8@example.com", "pw-not-used-here", token)
    log = tmp_path / "server.log"
    process, port = start(url, log, LOG_FORMAT="json")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await wait_ready(http)
        url_ws = f"ws://127.0.0.1:{port}/api/ws?token={token}"
        async with connect(url_ws) as ws:
            await ws.send(b'{"type":"ping"}\xff', text=True)
            with pytest.raises(ConnectionClosedError) as closed:
                await asyncio.wait_for(ws.recv(), 30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007

        def faults() -> list[dict]:
            lines = [json.loads(x) for x in log.read_text().splitlines() if x.startswith("{")]
            return [line for line in lines if "UTF-8" in line["message"]]

        async def logged() -> bool:
            return bool(faults())

        await until(logged, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=30)
    (line,) = faults()
    assert line["level"] == "WARNING" and "exception" not in line
    assert "Traceback" not in log.read_text()


async def test_the_bundled_mcp_server_leaves_the_apps_log_lines_alone(tmp_path: Path) -> None:
    """The demo MCP server runs in the app's process: starting it must not reconfigure the
    process's logging (uvicorn's own setup silenced "Uvicorn running on …", and scripts
    waiting for that line waited forever)."""
    url = sqlite_url(tmp_path)
    migrate(url)
    log = tmp_path / "server.log"
    process, port = start(url, log, MCP_DEMO_SERVER="1")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await wait_ready(http)

            async def announced() -> bool:
                return f"Uvicorn running on http://127.0.0.1:{port}" in log.read_text()

            await until(announced, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "Application startup complete" in log.read_text()


def test_text_lines_carry_the_request_id_in_brackets() -> None:
    config = logging_config(Settings())
    formatter = logging.Formatter(config.formatters["standard"]["format"])
    record = logging.makeLogRecord({"name": "app.x", "levelname": "INFO", "msg": "hello"})
    RequestIdFilter().filter(record)
    assert formatter.format(record).endswith(" - app.x - [-] hello")


def test_json_lines_keep_extra_fields() -> None:
    record = logging.makeLogRecord(
        {"name": "app.x", "levelname": "INFO", "msg": "a %s", "args": ("b",)}
    )
    record.run_id = "r1"
    RequestIdFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "a b" and line["run_id"] == "r1" and line["request_id"] == "-"


async def test_tool_events_are_debug_lines(caplog: pytest.LogCaptureFixture) -> None:
    """A busy server runs many tool calls a second: none of them is an INFO line."""
    call = ToolCall("call_1", "tasks", "create", {"title": "x"}, uuid.uuid4(), uuid.uuid4())
    listener = LoggingToolEvents()
    with caplog.at_level(logging.DEBUG, logger="app.tools"):
        await listener.on_start(call)
        await listener.on_progress(call, "half way", None)
        await listener.on_end(call, ToolResult.success({"id": 1}))
        await listener.on_error(call, ToolResult.failure("no", "validation_error"))
    assert len(caplog.records) == 4
    assert {record.levelno for record in caplog.records} == {logging.DEBUG}


def test_the_access_log_can_be_turned_off() -> None:
    """uvicorn's own --no-access-log is undone when the app configures logging; the
    setting is the switch (the benchmarks turn it off). uvicorn's access lines (no
    duration, one string) give way to the app's."""
    on = logging_config(Settings()).loggers
    off = logging_config(Settings(access_log=False)).loggers
    assert (on[ACCESS_LOGGER]["level"], off[ACCESS_LOGGER]["level"]) == ("INFO", "WARNING")
    assert on["uvicorn.access"]["level"] == off["uvicorn.access"]["level"] == "WARNING"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_an_access_line_has_its_parts_and_the_duration_of_the_whole_response() -> None:
    """Timed until the last body part is sent (a streamed response's whole length), not
    until its headers."""

    async def streaming(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        await asyncio.sleep(0.05)
        await send({"type": "http.response.body", "body": b"b"})

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async def ignore(message: Any) -> None:
        return None

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/threads",
        "query_string": b"code=abc&x=1",
        "http_version": "2",
        "client": ("10.0.0.9", 5151),
        "headers": [(b"x-request-id", b"req-77")],
    }
    # A handler of its own: the app's logging config keeps these records from caplog.
    logger, handler = logging.getLogger(ACCESS_LOGGER), Records()
    level, logger.level = logger.level, logging.INFO
    logger.addHandler(handler)
    try:
        await AccessLog(streaming)(dict(scope), ignore, ignore)
        with pytest.raises(RuntimeError):
            await AccessLog(failing)(dict(scope, method="GET"), ignore, ignore)
        await AccessLog(streaming)({"type": "lifespan"}, ignore, ignore)  # not HTTP: no line
    finally:
        logger.removeHandler(handler)
        logger.level = level
    streamed, failed = handler.records
    assert (streamed.method, streamed.path, streamed.query) == (
        "POST",
        "/api/threads",
        "code=REDACTED&x=1",
    )
    assert streamed.status == 201 and streamed.duration_ms >= 50
    assert streamed.client == "10.0.0.9:5151" and streamed.request_id == "req-77"
    assert streamed.getMessage() == (
        f'10.0.0.9:5151 - "POST /api/threads?code=REDACTED&x=1 HTTP/2" 201 '
        f"{streamed.duration_ms:.1f}ms"
    )
    assert failed.method == "GET" and failed.status == 500


def test_secret_query_values_are_redacted_from_records() -> None:
    record = logging.makeLogRecord(
        {
            "name": "uvicorn.access",
            "msg": '%s - "%s %s HTTP/%s" %d',
            "args": ("1.2.3.4:5", "GET", "/cb?state=s1&code=abc&Token=t-1#x", "1.1", 200),
        }
    )
    QuerySecretFilter().filter(record)
    assert record.getMessage() == (
        '1.2.3.4:5 - "GET /cb?state=s1&code=REDACTED&Token=REDACTED#x HTTP/1.1" 200'
    )
    plain = logging.makeLogRecord({"msg": "GET /api/threads?limit=5 and key words = fine"})
    QuerySecretFilter().filter(plain)
    assert plain.getMessage() == "GET /api/threads?limit=5 and key words = fine"


async def test_a_socket_token_in_the_url_is_not_logged(tmp_path: Path) -> None:
    """`/api/ws?token=…` is written by uvicorn as it came; the app's filter, not litellm's
    (switched off here: it hangs its own on uvicorn's loggers when imported), keeps the
    token out of the log."""
    url, token = sqlite_url(tmp_path), "tc_logs_query_token_must_not_be_logged"
    migrate(url)
    await asyncio.to_thread(seed_user, url, "query@example.com", "pw-not-used-here", token)
    log = tmp_path / "server.log"
    process, port = start(url, log, LITELLM_DISABLE_REDACT_SECRETS="true")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            await wait_ready(http)
            await http.get(f"/api/threads?token={token}")  # a client putting it anywhere
        async with connect(f"ws://127.0.0.1:{port}/api/ws?token={token}") as ws:
            await ws.send('{"type":"ping"}')
            await asyncio.wait_for(ws.recv(), 30)

        async def logged() -> bool:
            return '"WebSocket /api/ws?' in log.read_text()  # the handshake's line

        await until(logged, timeout=30)
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text()
    assert token not in text
    assert "/api/ws?token=REDACTED" in text and "GET /api/threads?token=REDACTED" in text
