"""Users' MCP tokens at rest: Fernet (AES-128-CBC + HMAC-SHA256) with MCP_TOKEN_KEY.

A database dump without the key holds no usable credential. The key is only in the
settings; without it per-user servers are off (one log line at startup).

Rotation: MCP_TOKEN_KEY may hold several keys, comma-separated (cryptography's
`MultiFernet`): the first seals, every one opens. Put the new key first and keep the old
one after it, restart, run `litestar connections rekey` (every stored secret sealed again
with the first key), then drop the old key. A secret no key opens reads as None: its
connection must be made again.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


def parse_keys(keys: str) -> list[str]:
    """The comma-separated keys, in order (blanks around them ignored)."""
    return [key.strip() for key in keys.split(",") if key.strip()]


class Vault:
    def __init__(self, keys: str) -> None:
        """`keys`: one Fernet key or several, comma-separated, the sealing one first.
        ValueError names the one that is not a Fernet key."""
        fernets = []
        parsed = parse_keys(keys)
        for position, key in enumerate(parsed, start=1):
            try:
                fernets.append(Fernet(key.encode()))
            except ValueError:
                which = f"key {position} of {len(parsed)}" if len(parsed) > 1 else "the key"
                raise ValueError(f"MCP_TOKEN_KEY: {which} is not a Fernet key") from None
        if not fernets:
            raise ValueError("MCP_TOKEN_KEY holds no key")
        self.key_count = len(fernets)
        self._fernet = MultiFernet(fernets)

    def seal(self, secret: str) -> str:
        """Sealed with the first key."""
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, sealed: str) -> str | None:
        """The secret, or None when no key opens it (sealed with a key since dropped)."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None

    def reseal(self, sealed: str) -> str | None:
        """The same secret sealed with the first key (its original timestamp kept), or None
        when no key opens it."""
        try:
            return self._fernet.rotate(sealed.encode()).decode()
        except InvalidToken:
            return None


def vault_from(key: str | None) -> Vault | str | None:
    """The vault, None without a key, or why the key is unusable."""
    if not key or not parse_keys(key):
        return None
    try:
        return Vault(key)
    except ValueError as exc:
        return f"{exc} (32 url-safe base64-encoded bytes: `Fernet.generate_key()`)"
