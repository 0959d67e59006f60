"""Namespaced tool names: `<server>__<tool>`, in what providers accept (^[a-zA-Z0-9_-]{1,64}$)."""

from __future__ import annotations

import hashlib
import re

SEPARATOR = "__"
MAX_LENGTH = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def tool_name(server: str, remote: str) -> str:
    """The name the model calls: unsafe characters become `_`; a name too long keeps its
    start and gets a short hash of the whole, so two long names never collide."""
    name = f"{server}{SEPARATOR}{_UNSAFE.sub('_', remote)}"
    if len(name) <= MAX_LENGTH and name == f"{server}{SEPARATOR}{remote}":
        return name
    digest = hashlib.sha256(f"{server}/{remote}".encode()).hexdigest()[:8]
    return f"{name[: MAX_LENGTH - 9]}_{digest}"
