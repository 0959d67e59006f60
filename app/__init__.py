"""The Litestar application; `litestar run` from the repo root discovers `create_app`."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.asgi import create_app
from app.realtime.pings import make_default_for_uvicorn

make_default_for_uvicorn()  # protocol pings count as socket activity under `litestar run`

__all__ = ("create_app",)
