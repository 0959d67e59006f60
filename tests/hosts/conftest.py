"""Fixtures of the several-hosts tests: the network, the data host, the model, and a
deployment (two app hosts) per wake-up transport.

Root builds network namespaces; without it (or without `ip`/`nft`) these tests skip
with one line, unless REQUIRE_NETNS is set (CI), where that is a failure.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.hosts.deployment import (
    APP_PORT,
    LAG_PORT,
    AppHost,
    DataHost,
    app_env,
    data_host,
)
from tests.hosts.network import Network, missing
from tests.hosts.turns import BUNDLE, Deployment, scripted_model
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import FakeLLM
from tests.support.test_tools import write_agent_types

TRANSPORTS = ("wake-redis", "wake-pg")  # not "[postgresql": every database here is one


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # One network of fixed names and addresses: under pytest-xdist every test here runs
    # on the same worker (`--dist loadgroup`), one after the other.
    for item in items:
        if "tests/hosts/" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("hosts"))


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


@pytest.fixture(scope="session")
async def apns(
    network: Network, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FakeApns]:
    """A fake APNs on the model's address: "no duplicate push" counts what it received."""
    async with FakeApns(tmp_path_factory.mktemp("apns"), host=network.address("model")) as fake:
        yield fake


@pytest.fixture(scope="session")
async def deployments(
    network: Network,
    data: DataHost,
    model: FakeLLM,
    apns: FakeApns,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[dict[str, Deployment]]:
    """Both transports' deployments, started at once (each server takes seconds to import
    the app; four in parallel take little more than one). Each has its own database, and
    its own server on each app host (port APP_PORT, or APP_PORT + 1 for the second)."""
    built: dict[str, Deployment] = {}
    try:
        for index, transport in enumerate(TRANSPORTS):
            workdir = tmp_path_factory.mktemp(transport)
            database = await data.new_database()
            url = f"postgresql+asyncpg://postgres@127.0.0.1:{LAG_PORT + index}/{database}"
            redis_url = data.redis_url if transport == "wake-redis" else None
            env = app_env(url, model.base_url, write_agent_types(workdir), redis_url)
            env |= {
                "APNS_BASE_URL": apns.base_url,
                "APNS_CA_FILE": apns.ca_file,
                "APNS_KEY_FILE": apns.key_file,
                "APNS_KEY_ID": apns.key_id,
                "APNS_TEAM_ID": apns.team_id,
                "APNS_TOPIC": BUNDLE,
                "PUSH_POLL_SECONDS": "1",
            }
            hosts = [
                AppHost(name, network, env, workdir / f"{name}.log", port=APP_PORT + index)
                for name in ("app1", "app2")
            ]
            built[transport] = Deployment(transport, network, data, database, hosts, apns)
            for host in hosts:
                host.start_lag(LAG_PORT + index)
                host.start()
        await asyncio.gather(*(host.ready() for d in built.values() for host in d.hosts))
        yield built
    finally:
        network.heal_all()
        for deployment in built.values():
            for host in deployment.hosts:
                host.stop()
                host.stop_lag()
            await deployment.close()


@pytest.fixture(scope="module", params=TRANSPORTS)
def deployment(request: pytest.FixtureRequest, deployments: dict[str, Deployment]) -> Deployment:
    """One transport's deployment: "wake-redis" (REDIS_URL set: frames and wake-ups over
    Redis) or "wake-pg" (no Redis: wake-ups over LISTEN/NOTIFY)."""
    return deployments[request.param]


@pytest.fixture
async def healed(deployment: Deployment) -> AsyncIterator[Deployment]:
    """The deployment, with every fault lifted after the test (whatever it did)."""
    try:
        yield deployment
    finally:
        deployment.network.heal_all()
        for host in deployment.hosts:
            host.delay(0)
