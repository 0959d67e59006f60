"""Password hashing and API token generation (tokens are stored only as digests)."""

from __future__ import annotations

import hashlib
import secrets

from pwdlib import PasswordHash

_password_hash = PasswordHash.recommended()
TOKEN_PREFIX = "tc_"
# Verifying against this keeps the time of a login for an unknown email like a real one.
_DUMMY_HASH = _password_hash.hash("timing-equaliser")


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
