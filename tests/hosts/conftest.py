"""Fixtures of the several-hosts tests: the network, the data host, the model, and a
deployment (two app hosts) per wake-up transport.

Root builds network namespaces; without it (or without `ip`/`nft`) these tests skip
with one line, unless REQUIRE_NETNS is set (CI), where that is a failure.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.hosts.deployment import (
    LAG_PORT,
    AppHost,
    DataHost,
    app_env,
    data_host,
)
from tests.hosts.network import Network, missing
from tests.hosts.turns import Deployment, scripted_model
from tests.support.fake_llm import FakeLLM
from tests.support.test_tools import write_agent_types

TRANSPORTS = ("wake-redis", "wake-pg")  # not "[postgresql": every database here is one


@pytest.fixture(scope="session")
def network() -> Iterator[Network]:
    if reason := missing():
        if os.environ.get("REQUIRE_NETNS"):
            pytest.fail(f"REQUIRE_NETNS is set but hosts cannot be built: {reason}")
        pytest.skip(f"several-hosts tests: {reason}")
    built = Network()
    built.create()
    try:
        yield built
    finally:
        built.destroy()


@pytest.fixture(scope="session")
def data(network: Network, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DataHost]:
    with data_host(network, tmp_path_factory.mktemp("data-host")) as host:
        yield host


@pytest.fixture(scope="session")
async def model(network: Network) -> AsyncIterator[FakeLLM]:
    async with FakeLLM(scripted_model, host=network.address("model")) as llm:
        yield llm


@pytest.fixture(scope="module", params=TRANSPORTS)
async def deployment(
    request: pytest.FixtureRequest,
    network: Network,
    data: DataHost,
    model: FakeLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Deployment]:
    """Two app hosts on one fresh database; REDIS_URL set for `wake-redis` only."""
    workdir = tmp_path_factory.mktemp(re.sub(r"\W", "-", request.param))
    database = await data.new_database()
    url = f"postgresql+asyncpg://postgres@127.0.0.1:{LAG_PORT}/{database}"
    redis_url = data.redis_url if request.param == "wake-redis" else None
    env = app_env(url, model.base_url, write_agent_types(workdir), redis_url)
    hosts = [AppHost(name, network, env, workdir / f"{name}.log") for name in ("app1", "app2")]
    built = Deployment(request.param, network, data, database, hosts)
    try:
        for host in hosts:
            host.start_lag()
            host.start()
        for host in hosts:
            await host.ready()
        yield built
    finally:
        network.heal_all()
        for host in hosts:
            host.stop()
            host.stop_lag()


@pytest.fixture
async def healed(deployment: Deployment) -> AsyncIterator[Deployment]:
    """The deployment, with every fault lifted after the test (whatever it did)."""
    try:
        yield deployment
    finally:
        deployment.network.heal_all()
        for host in deployment.hosts:
            host.delay(0)

