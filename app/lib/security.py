"""Password hashing and API token generation (tokens are stored only as digests)."""

from __future__ import annotations

import hashlib
import secrets

from litestar.datastructures import MutableScopeHeaders
from litestar.types import Message, Scope
from pwdlib import PasswordHash

_password_hash = PasswordHash.recommended()
TOKEN_PREFIX = "tc_"
# Verifying against this keeps the time of a login for an unknown email like a real one.
_DUMMY_HASH = _password_hash.hash("timing-equaliser")


MIN_PASSWORD_LENGTH = 10


def weak_password_reasons(password: str, email: str) -> list[str]:
    """The rules a new password breaks (empty when it is acceptable): a minimum length,
    and none of the first guesses of an attacker who knows the email."""
    reasons = []
    if len(password) < MIN_PASSWORD_LENGTH:
        reasons.append(f"at least {MIN_PASSWORD_LENGTH} characters")
    if password and len(set(password)) == 1:
        reasons.append("not one character repeated")
    if password.strip().lower() == email.strip().lower():
        reasons.append("not the email address")
    return reasons


def hash_password(password: str) -> str:
    return _password_hash.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    if password_hash is None:
        _password_hash.verify(password, _DUMMY_HASH)
        return False
    return _password_hash.verify(password, password_hash)


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    # Tokens carry 256 random bits, so a fast digest is as safe as a slow KDF here
    # and keeps authentication to one indexed lookup per request.
    return hashlib.sha256(token.encode()).hexdigest()


async def add_security_headers(message: Message, scope: Scope) -> None:
    """On every HTTP response, errors included: browsers must not sniff a JSON body
    (or an error page echoing input) into something executable."""
    if message["type"] == "http.response.start":
        MutableScopeHeaders.from_message(message)["X-Content-Type-Options"] = "nosniff"
