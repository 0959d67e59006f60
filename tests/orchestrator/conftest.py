"""An app with the runner on and its model pointed at a fake OpenAI-compatible server.

The fake server is real HTTP on a loopback port; litellm is never mocked. Each module
gets its own app (the runner must not outlive it: other modules expect runs to stay
queued), and every test ends with no run left executing and empty tables.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import create_app
from app.orchestrator.door import openai_client as door_http
from app.settings import Settings
from app.tools.runtime.toolsets import load_agent_types
from tests.conftest import _empty_all_tables, running_lifespan
from tests.orchestrator.openai_client import openai_base_url, openai_client  # noqa: F401
from tests.orchestrator.support import FrameRecorder, OrchestratorApi
from tests.support.fake_llm import FakeLLM
from tests.support.result_schemas import assert_cells_match_schema
from tests.support.test_tools import register_test_tools, write_agent_types


@pytest.fixture(scope="session")
async def fake_llm() -> AsyncIterator[FakeLLM]:
    async with FakeLLM() as server:
        yield server
    await door_http.close_session()  # the model door's connections to it (apps close theirs)


@pytest.fixture(scope="session")
def agent_types_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_test_tools()
    return write_agent_types(tmp_path_factory.mktemp("agent_types"))


def orchestrator_settings(
    database_url: str, fake: FakeLLM, agent_types: Path, **overrides
) -> Settings:
    values = dict(
        database_url=database_url,
        runner_enabled=True,
        llm_model="openai/fake-model",
        llm_api_base=fake.base_url,
        llm_api_key="test-key",
        llm_timeout_seconds=1.0,
        llm_max_retries=2,
        llm_retry_base_seconds=0.05,
        runner_poll_seconds=0.2,
        run_lease_seconds=5.0,
        approval_ttl_seconds=30.0,
        agent_types_file=str(agent_types),
    )
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    """Override in a module to change its app's settings."""
    return {}


DOORS = ("fast", "litellm")  # the model door's two paths (see app/orchestrator/door/llm.py)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module with `BOTH_DOORS = True` runs each test through both paths of the door."""
    if "door" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_DOORS", False):
        metafunc.parametrize("door", DOORS, indirect=True, scope="module")


@pytest.fixture(scope="module")
def door(request: pytest.FixtureRequest) -> str:
    """`fast`: OpenAI-format streams read off the wire; `litellm`: litellm in full."""
    return getattr(request, "param", "fast")


@pytest.fixture(scope="module")
async def orch_app(
    database_url: str,
    fake_llm: FakeLLM,
    agent_types_file: Path,
    settings_overrides: dict,
    door: str,
) -> AsyncIterator[Litestar]:
    overrides = {"llm_fast_stream": door == "fast", **settings_overrides}
    settings = orchestrator_settings(database_url, fake_llm, agent_types_file, **overrides)
    app = create_app(settings)
    async with running_lifespan(app):
        yield app
    load_agent_types(None)  # leave the default agent types to the other modules


@pytest.fixture
async def api(
    orch_app: Litestar,
    fake_llm: FakeLLM,
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    agent_types_file: Path,
) -> AsyncIterator[OrchestratorApi]:
    load_agent_types(agent_types_file)  # another module's app may have reset them
    fake_llm.reset()
    recorder = FrameRecorder()
    transport = httpx.ASGITransport(app=orch_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        with recorder.listening():
            api = await OrchestratorApi.create(client, db, orch_app, fake_llm, recorder)
            try:
                yield api
            finally:
                await api.drain()
    await _empty_all_tables(session_factory)
    # Whatever the test did, every cell it published carried data of its declared type.
    assert_cells_match_schema(recorder.cells())
