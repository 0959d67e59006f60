"""`uvicorn --factory tests.support.orchestrator_app:create`: the app with the test tools
(used by the SIGKILL test, which runs the server as a separate process)."""

from __future__ import annotations

from litestar import Litestar

from app import create_app
from app.settings import Settings
from tests.support.test_tools import register_test_tools


def create() -> Litestar:
    register_test_tools()
    return create_app(Settings.from_env())
