"""Users of recently seen bearer tokens, so most requests skip the token lookup.

An entry lives `auth_cache_seconds` (never past the token's expiry). A revocation through
the API forgets the token at once in this process (after its commit) and, through the
channels' control channel, in the others (app/realtime/channels.py); a forgotten token
is not cached again for one TTL, so a lookup racing the revocation cannot bring it back.
A revocation written straight into the database takes effect within the TTL, like the
sockets' token check (app/realtime/tokens.py).

Each hit is a fresh `User` built from the cached columns through its constructor: requests
never share an ORM instance (one could otherwise be attached to two sessions at once). It
is transient (in no session): handlers read it; one that changes the user loads it.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sqlalchemy import inspect

from app.db.models import User
from app.lib.time import utcnow

MAX_ENTRIES = 10_000
_COLUMNS = tuple(c.key for c in inspect(User).column_attrs if not c.key.startswith("_"))


class TokenCache:
    def __init__(self, ttl_seconds: float) -> None:
        self.ttl = ttl_seconds
        self._entries: dict[str, tuple[float, dict[str, Any]]] = {}
        self._forgotten: dict[str, float] = {}  # digest -> not cached again before

    def get(self, digest: str) -> User | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry[0] <= time.monotonic():
            self._entries.pop(digest, None)
            return None
        return User(**entry[1])

    def put(self, digest: str, user: User, expires_at: datetime) -> None:
        now = time.monotonic()
        if self.ttl <= 0 or self._forgotten.get(digest, 0.0) > now:
            return
        left = (expires_at - utcnow()).total_seconds()
        if left <= 0:
            return
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.pop(next(iter(self._entries)))  # the oldest entry
        columns = {name: getattr(user, name) for name in _COLUMNS}
        self._entries[digest] = (now + min(self.ttl, left), columns)

    def forget(self, digest: str) -> None:
        now = time.monotonic()
        self._entries.pop(digest, None)
        if len(self._forgotten) >= MAX_ENTRIES:
            self._forgotten = {d: t for d, t in self._forgotten.items() if t > now}
        self._forgotten[digest] = now + self.ttl

    def clear(self) -> None:
        self._entries.clear()
        self._forgotten.clear()
