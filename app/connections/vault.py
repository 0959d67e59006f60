"""Users' MCP tokens at rest: Fernet (AES-128-CBC + HMAC-SHA256) with MCP_TOKEN_KEY.

A database dump without the key holds no usable credential. The key is only in the
settings; without it per-user servers are off (one log line at startup).
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken


class Vault:
    def __init__(self, key: str) -> None:
        self._fernet = Fernet(key.encode())  # ValueError: not a Fernet key

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str | None:
        """The secret, or None when it was sealed with another key (rotated)."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None


def vault_from(key: str | None) -> Vault | str | None:
    """The vault, None without a key, or why the key is unusable."""
    if not key:
        return None
    try:
        return Vault(key)
    except ValueError:
        return "MCP_TOKEN_KEY is not a Fernet key (32 url-safe base64-encoded bytes)"
