"""A fake APNs server the tests start: HTTP/2 over TLS (a test CA), real sockets.

It checks what Apple checks before accepting a push: HTTP/2, the provider JWT (ES256,
verified with the public key of the key the server was given, `kid` and `iss`), the
`apns-topic`, `apns-push-type`, `apns-priority`, `apns-expiration` and
`apns-collapse-id` headers and the JSON payload (an `aps` dictionary, at most 4 KB).
A request that fails a check is answered 400 with Apple's reason and listed in
`rejected`; tests script answers per token (410, 429, 500) with `answer(token, ...)`.

    async with FakeApns(tmp_path) as apns:
        settings: apns_base_url=apns.base_url, apns_ca_file=apns.ca_file,
                  apns_key_file=apns.key_file, apns_key_id=apns.key_id, ...
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypercorn.asyncio import serve
from hypercorn.config import Config

KEY_ID = "TESTKEY123"
TEAM_ID = "TESTTEAM12"
PUSH_TYPES = {"alert", "background", "liveactivity", "voip", "complication", "fileprovider"}


@dataclass
class Received:
    token: str
    headers: dict[str, str]
    payload: dict[str, Any]

    @property
    def push_type(self) -> str:
        return self.headers["apns-push-type"]


@dataclass
class FakeApns:
    directory: Path
    host: str = "127.0.0.1"  # another address: an APNs other hosts reach (tests/hosts)
    topics: set[str] = field(default_factory=lambda: {"com.example.toolcells"})
    received: list[Received] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (token, reason)
    attempts: list[tuple[str, int]] = field(default_factory=list)  # every answer given

    def __post_init__(self) -> None:
        self._answers: dict[str, deque[tuple[int, str | None]]] = defaultdict(deque)
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        private = ec.generate_private_key(ec.SECP256R1())
        self.key_file = str(self.directory / f"AuthKey_{KEY_ID}.p8")
        Path(self.key_file).write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        self.public_key = private.public_key()
        self.key_id, self.team_id = KEY_ID, TEAM_ID

    # -- scripting --------------------------------------------------------------------
    def answer(self, token: str, *statuses: int, reason: str | None = None) -> None:
        """The next answers for this token (then 200 again)."""
        for status in statuses:
            self._answers[token].append((status, reason or _default_reason(status)))

    def to(self, token: str) -> list[Received]:
        return [r for r in self.received if r.token == token]

    def clear(self) -> None:
        self.received.clear()
        self.rejected.clear()
        self.attempts.clear()
        self._answers.clear()

    async def wait_for(self, predicate, timeout: float = 30) -> None:  # noqa: ASYNC109
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    async def wait_received(self, count: int, timeout: float = 30) -> list[Received]:  # noqa: ASYNC109
        await self.wait_for(lambda: len(self.received) >= count, timeout)
        return self.received

    # -- the server ---------------------------------------------------------------------
    async def __aenter__(self) -> FakeApns:
        ca = trustme.CA()
        cert = ca.issue_cert(self.host, "localhost")
        self.ca_file = str(self.directory / "apns-ca.pem")
        ca.cert_pem.write_to_path(self.ca_file)
        cert_file = str(self.directory / "apns-server.pem")
        cert.private_key_and_cert_chain_pem.write_to_path(cert_file)
        sock = socket.socket()
        sock.bind((self.host, 0))
        port = sock.getsockname()[1]
        sock.close()
        config = Config()
        config.bind = [f"{self.host}:{port}"]
        config.certfile = config.keyfile = cert_file
        config.alpn_protocols = ["h2"]
        config.accesslog = None
        config.errorlog = None
        self.base_url = f"https://{self.host}:{port}"
        self._task = asyncio.create_task(
            serve(self._app, config, shutdown_trigger=self._stop.wait)  # type: ignore[arg-type]
        )
        await self._wait_listening(self.host, port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 5)

    @staticmethod
    async def _wait_listening(host: str, port: int) -> None:
        async with asyncio.timeout(10):
            while True:
                try:
                    _, writer = await asyncio.open_connection(host, port)
                except OSError:
                    await asyncio.sleep(0.02)
                    continue
                writer.close()
                return

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        token = scope["path"].rsplit("/", 1)[-1]
        status, reason = self._judge(scope, headers, body, token)
        self.attempts.append((token, status))
        self._changed.set()
        response = b"" if status == 200 else json.dumps({"reason": reason}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"apns-id", headers.get("apns-id", "x").encode())],
            }
        )
        await send({"type": "http.response.body", "body": response})

    def _judge(
        self, scope: dict[str, Any], headers: dict[str, str], body: bytes, token: str
    ) -> tuple[int, str | None]:
        problem = self._check(scope, headers, body)
        if problem is not None:
            self.rejected.append((token, problem))
            return (403 if "ProviderToken" in problem else 400), problem
        if self._answers.get(token):
            status, reason = self._answers[token].popleft()
            if status != 200:
                return status, reason
        self.received.append(Received(token, headers, json.loads(body)))
        return 200, None

    def _check(self, scope: dict[str, Any], headers: dict[str, str], body: bytes) -> str | None:
        if scope.get("http_version") != "2" or scope["method"] != "POST":
            return "BadMethodOrProtocol"
        if not scope["path"].startswith("/3/device/"):
            return "BadPath"
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return "MissingProviderToken"
        try:
            header = jwt.get_unverified_header(token)
            claims = jwt.decode(token, self.public_key, algorithms=["ES256"])
        except jwt.PyJWTError:
            return "InvalidProviderToken"
        if header.get("kid") != self.key_id or claims.get("iss") != self.team_id:
            return "InvalidProviderToken"
        if "iat" not in claims:
            return "InvalidProviderToken"
        push_type = headers.get("apns-push-type")
        if push_type not in PUSH_TYPES:
            return "InvalidPushType"
        topic = headers.get("apns-topic", "")
        expected = {f"{t}.push-type.liveactivity" for t in self.topics}
        if (topic not in expected) if push_type == "liveactivity" else (topic not in self.topics):
            return "TopicDisallowed"
        if headers.get("apns-priority") not in {"5", "10", "1"}:
            return "BadPriority"
        if not headers.get("apns-expiration", "").isdigit():
            return "BadExpirationDate"
        if len(headers.get("apns-collapse-id", "").encode()) > 64:
            return "BadCollapseId"
        if len(body) > 4096:
            return "PayloadTooLarge"
        try:
            payload = json.loads(body)
        except ValueError:
            return "BadPayload"
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            return "PayloadEmpty"
        if push_type == "liveactivity" and not _live_activity_ok(payload["aps"]):
            return "BadPayload"
        return None


def _live_activity_ok(aps: dict[str, Any]) -> bool:
    """update/end carry a content-state; a push-to-start (iOS 17.2+) also names the
    attributes type, gives the attributes and an alert."""
    event = aps.get("event")
    if event not in {"update", "end", "start"} or not isinstance(aps.get("content-state"), dict):
        return False
    if event == "start":
        return (
            isinstance(aps.get("attributes-type"), str)
            and isinstance(aps.get("attributes"), dict)
            and isinstance(aps.get("alert"), dict)
        )
    return True


def _default_reason(status: int) -> str | None:
    return {
        410: "Unregistered",
        429: "TooManyRequests",
        500: "InternalServerError",
        503: "ServiceUnavailable",
        400: "BadDeviceToken",
    }.get(status)
