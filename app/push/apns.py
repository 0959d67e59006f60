"""The APNs HTTP/2 client: token-based auth (an ES256 JWT from the team's .p8 key).

httpx speaks HTTP/2 to Apple (h2); PyJWT (with cryptography) signs the provider token,
cached and re-signed every 50 minutes (Apple refuses tokens older than an hour and
re-signing more often than every 20 minutes). An answer is classified once here into what
the sender does next (`Verdict`).
"""

from __future__ import annotations

import enum
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import msgspec

from app.settings import Settings

TOKEN_LIFETIME_SECONDS = 50 * 60
_encode = msgspec.json.Encoder().encode
# 400 reasons that say the token itself is bad: the device goes, as on a 410.
DEAD_TOKEN_REASONS = frozenset({"BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered"})
STALE_JWT_REASONS = frozenset({"ExpiredProviderToken", "InvalidProviderToken"})


class Verdict(enum.StrEnum):
    SENT = "sent"
    RETRY = "retry"  # 429, 5xx, a connection error, a provider token to re-sign
    DEAD_TOKEN = "dead_token"  # 410 Unregistered, 400 BadDeviceToken: delete the device
    FAILED = "failed"  # any other refusal: retrying would not help


@dataclass(frozen=True, slots=True)
class Notification:
    token: str
    environment: str
    topic: str
    push_type: str
    priority: int
    expiration: int  # epoch seconds; 0: deliver once or never
    collapse_id: str | None
    payload: dict[str, Any]
    apns_id: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    verdict: Verdict
    status: int | None
    reason: str | None


class ProviderToken:
    """The signed JWT, re-signed when older than TOKEN_LIFETIME_SECONDS."""

    def __init__(self, key_pem: str, key_id: str, team_id: str) -> None:
        self._key, self._key_id, self._team_id = key_pem, key_id, team_id
        self._token: str | None = None
        self._issued_at = 0.0

    def get(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if self._token is None or now - self._issued_at >= TOKEN_LIFETIME_SECONDS:
            self._issued_at = now
            self._token = jwt.encode(
                {"iss": self._team_id, "iat": int(now)},
                self._key,
                algorithm="ES256",
                headers={"kid": self._key_id},
            )
        return self._token

    def invalidate(self) -> None:
        self._token = None


class ApnsClient:
    def __init__(self, settings: Settings) -> None:
        assert settings.push_enabled
        key = Path(settings.apns_key_file or "").read_text()
        self._jwt = ProviderToken(key, settings.apns_key_id or "", settings.apns_team_id or "")
        # each token goes to its own environment's endpoint (APNS_BASE_URL: one for all)
        self._endpoints = {
            "sandbox": settings.apns_base_url or settings.apns_sandbox_base_url,
            "production": settings.apns_base_url or settings.apns_production_base_url,
        }
        verify: ssl.SSLContext | bool = True
        if settings.apns_ca_file:
            verify = ssl.create_default_context(cafile=settings.apns_ca_file)
        self._http = httpx.AsyncClient(
            http2=True, verify=verify, timeout=httpx.Timeout(15.0, connect=10.0)
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _url(self, note: Notification) -> str:
        base = self._endpoints.get(note.environment, self._endpoints["production"])
        return f"{base.rstrip('/')}/3/device/{note.token}"

    def _headers(self, note: Notification) -> dict[str, str]:
        headers = {
            "authorization": f"bearer {self._jwt.get()}",
            "apns-topic": note.topic,
            "apns-push-type": note.push_type,
            "apns-priority": str(note.priority),
            "apns-expiration": str(note.expiration),
        }
        if note.collapse_id:
            headers["apns-collapse-id"] = note.collapse_id
        if note.apns_id:
            headers["apns-id"] = note.apns_id
        return headers

    async def send(self, note: Notification) -> Answer:
        try:
            response = await self._http.post(
                self._url(note), content=_encode(note.payload), headers=self._headers(note)
            )
        except httpx.HTTPError as error:  # connect, TLS, reset, timeout: try again later
            return Answer(Verdict.RETRY, None, type(error).__name__)
        return self._judge(response)

    def _judge(self, response: httpx.Response) -> Answer:
        status = response.status_code
        reason = _reason(response)
        if status == 200:
            return Answer(Verdict.SENT, status, None)
        if status == 410 or (status == 400 and reason in DEAD_TOKEN_REASONS):
            return Answer(Verdict.DEAD_TOKEN, status, reason)
        if status == 403 and reason in STALE_JWT_REASONS:
            self._jwt.invalidate()
            return Answer(Verdict.RETRY, status, reason)
        if status == 429 or status >= 500:
            return Answer(Verdict.RETRY, status, reason)
        return Answer(Verdict.FAILED, status, reason)


def _reason(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("reason") if isinstance(body, dict) else None
