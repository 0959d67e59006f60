# ruff: noqa: ASYNC109 - polling other processes over the network
"""Turns on a deployment of two app hosts, and what must hold after any fault.

The model's answers follow from the conversation (`scripted_model`), so any number of
turns on either host get the same script: "slow N" calls `test_slow` for N seconds,
"echo X" calls `test_echo`, then the model answers "Done." once the tool result is in.

After a fault is lifted, `settle` waits until every run of the thread has ended, no
cell is `in_progress`, and the phone's state equals a fresh fetch (the Zulip rule), and
says how long that took; `assert_clean` then checks that no write reached a run or its
messages after the run ended (the write audit of tests/hosts/deployment.py) and that the
phone got no frame twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine

from tests.conftest import ApiUser, make_api_user
from tests.hosts.deployment import AppHost, DataHost
from tests.hosts.network import Network
from tests.hosts.phone import Phone
from tests.realtime.support import fetch_messages
from tests.support.fake_apns import FakeApns
from tests.support.fake_llm import Call, Response, Text, ToolCalls
from tests.support.processes import until

ENDED = ("completed", "failed", "cancelled")
BUNDLE = "com.example.toolcells"


def scripted_model(body: dict[str, Any]) -> Response:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Text("Done.")
    content = last["content"] if isinstance(last["content"], str) else ""
    verb, _, argument = content.partition(" ")
    if verb == "slow":
        return ToolCalls(Call("test_slow", {"action": "wait", "seconds": float(argument)}))
    if verb == "echo":
        return ToolCalls(Call("test_echo", {"action": "echo", "text": argument}))
    return Text("Hello.")


@dataclass
class Turn:
    thread_id: str
    run_id: str


@dataclass
class Deployment:
    transport: str  # "wake-redis" (REDIS_URL set) or "wake-pg" (LISTEN/NOTIFY, no Redis)
    network: Network
    data: DataHost
    database: str
    hosts: list[AppHost]
    apns: FakeApns
    _engine: AsyncEngine | None = field(default=None, repr=False)

    @property
    def redis(self) -> bool:
        return self.transport == "wake-redis"

    @property
    def engine(self) -> AsyncEngine:
        """This test's own connection to the data host (from the clients' side)."""
        if self._engine is None:
            self._engine = create_async_engine(self.data.cluster.url(self.database))
        return self._engine

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()

    def host(self, name: str) -> AppHost:
        return next(host for host in self.hosts if host.name == name)

    def other(self, host: AppHost) -> AppHost:
        return next(other for other in self.hosts if other is not host)

    def phone(self, turn: Turn, user: ApiUser, first: AppHost) -> Phone:
        """A phone on `first`, resuming on the other host when its socket dies."""
        urls = [first.ws_url, self.other(first).ws_url]
        return Phone(turn.thread_id, user.token, urls)

    async def user(self) -> ApiUser:
        async with AsyncSession(self.engine, expire_on_commit=False) as db:
            user = await make_api_user(db)
            user.agent.agent_type = "tester"
            await db.commit()
            return user

    async def register_device(self, user: ApiUser, via: AppHost) -> str:
        """A phone's push token for the user: its runs' ends are pushed when it does not
        watch the thread."""
        token = uuid.uuid4().hex * 2
        body = {"token": token, "environment": "sandbox", "bundle_id": BUNDLE}
        async with httpx.AsyncClient(base_url=via.base_url, headers=user.headers) as http:
            response = await http.post("/api/devices", json=body)
        assert response.status_code == 201, response.text
        return token

    def pushes(self, turn: Turn) -> list[tuple[str, str]]:
        """(run id, kind) of every push APNs received about the turn's thread."""
        return [
            (push.payload.get("run_id", ""), push.payload.get("kind", ""))
            for push in self.apns.received
            if push.payload.get("thread_id") == turn.thread_id
        ]

    async def sql(self, statement: str, **params: Any) -> list[Any]:
        async with self.engine.connect() as conn:
            return list(await conn.execute(text(statement), params))

    async def start_turn(self, user: ApiUser, via: AppHost, content: str) -> Turn:
        # A phone waits longer than httpx's 5 s default: over a slow, lossy link to the
        # database (test_slow_links.py) a post's round trips and their resends take that.
        http = httpx.AsyncClient(base_url=via.base_url, headers=user.headers, timeout=30)
        async with http:
            thread = await http.post("/api/threads", json={"agent_id": str(user.agent.id)})
            thread_id = thread.json()["id"]
            return await self.post(http, thread_id, content)

    async def post(self, http: httpx.AsyncClient, thread_id: str, content: str) -> Turn:
        posted = await http.post(f"/api/threads/{thread_id}/messages", json={"content": content})
        assert posted.status_code == 202, posted.text
        return Turn(thread_id, posted.json()["run"]["id"])

    async def lease_owner(self, turn: Turn) -> str:
        """The lease owner of the turn's run, once a runner claimed it."""

        async def owner() -> str | None:
            rows = await self.sql("SELECT lease_owner FROM runs WHERE id = :id", id=turn.run_id)
            return rows[0][0]

        return await until(owner, timeout=30)

    async def runner_of(self, turn: Turn) -> AppHost:
        """The host whose runner claimed the turn's run (once it has)."""
        lease_owner = await self.lease_owner(turn)
        return next(host for host in self.hosts if host.owns(lease_owner))

    async def tool_running(self, turn: Turn) -> None:
        """Wait until the turn's tool cell is `in_progress` (mid-turn)."""

        async def running() -> bool:
            rows = await self.sql(
                "SELECT 1 FROM thread_messages WHERE run_id = :id"
                " AND tool_activity->>'status' = 'in_progress'",
                id=turn.run_id,
            )
            return bool(rows)

        await until(running, timeout=30)

    async def fresh(self, turn: Turn, user: ApiUser, via: AppHost) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=via.base_url, timeout=10) as http:
            return await fetch_messages(http, turn.thread_id, user.headers)

    async def settle(
        self, turn: Turn, user: ApiUser, phone: Phone, via: AppHost, timeout: float = 60
    ) -> float:
        """Seconds until the thread's runs ended, no cell is in_progress and the phone
        holds what a fresh fetch gives. On the PostgreSQL transport frames do not cross
        hosts (no Redis: each process's channels are its own), so there the phone resumes
        once (as the app does when it comes back to the foreground) before it must match."""
        started, resumed = time.monotonic(), False
        async with asyncio.timeout(timeout):
            while True:
                fresh = await self._quiet(turn, user, via)
                if fresh is not None:
                    if await phone.matches(fresh, timeout=1 if not self.redis else 3):
                        return time.monotonic() - started
                    if not self.redis and not resumed:
                        await phone.resume()
                        resumed = True
                await asyncio.sleep(0.2)

    async def _quiet(self, turn: Turn, user: ApiUser, via: AppHost) -> dict[str, Any] | None:
        """A fresh fetch once every run of the thread ended and no cell is in_progress."""
        rows = await self.sql(
            "SELECT status FROM runs WHERE thread_id = :thread", thread=turn.thread_id
        )
        if any(status not in ENDED for (status,) in rows):
            return None
        try:
            fresh = await self.fresh(turn, user, via)
        except httpx.TransportError:
            return None
        cells = [m.get("tool_activity") for m in fresh["messages"].values()]
        if any(cell and cell["status"] == "in_progress" for cell in cells):
            return None
        return fresh

    async def writes_after_end(self, turn: Turn) -> list[Any]:
        """Writes to the thread's runs or their messages made after (and not with) the
        write that ended the run: a status change, or any message write."""
        return await self.sql(
            """
            WITH ends AS (
                SELECT DISTINCT ON (run_id) run_id, at, tx, status FROM chaos_writes
                WHERE tbl = 'runs' AND status IN ('completed', 'failed', 'cancelled')
                ORDER BY run_id, at
            )
            SELECT w.tbl, w.run_id, w.status, w.seq, w.activity, w.at - e.at
            FROM chaos_writes w JOIN ends e USING (run_id)
            JOIN runs r ON r.id = w.run_id
            WHERE r.thread_id = CAST(:thread AS uuid) AND w.at > e.at AND w.tx <> e.tx
              AND (w.tbl = 'thread_messages' OR w.status IS DISTINCT FROM e.status)
            ORDER BY w.at
            """,
            thread=turn.thread_id,
        )

    async def assert_clean(self, turn: Turn, phone: Phone) -> None:
        late = await self.writes_after_end(turn)
        assert late == [], f"written after the run ended: {late}"
        assert phone.out_of_order == [], "a frame came twice or out of order"
        pushes = self.pushes(turn)
        assert len(pushes) == len(set(pushes)), f"a push sent twice: {pushes}"

    async def run_status(self, turn: Turn) -> tuple[str, str | None]:
        rows = await self.sql("SELECT status, error FROM runs WHERE id = :id", id=turn.run_id)
        return rows[0][0], rows[0][1]


async def runs_ended_on(host: AppHost) -> float:
    """How many runs this host's runner has ended or found fenced (its metrics)."""
    async with httpx.AsyncClient(base_url=host.base_url, timeout=5) as http:
        body = (await http.get("/metrics")).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in body.splitlines()
        if line.startswith(("toolcells_runs_total{", "toolcells_fenced_total{"))
    )


async def execution_over(host: AppHost, before: float, timeout: float) -> bool:
    """Wait until the host's runner ended one more run than `before` (the execution a
    fault interrupted is over, whatever it did); False if it did not within `timeout`."""

    async def ended() -> bool:
        try:
            return await runs_ended_on(host) > before
        except httpx.TransportError:
            return False

    try:
        await until(ended, timeout=timeout, every=0.3)
    except TimeoutError:
        return False
    return True


class HeartbeatWatch:
    """The longest a host's heartbeat row stayed unchanged while watched (on the
    database's clock, from this test's own link to the data host): whether a fault of
    another host ever stopped it."""

    def __init__(self, deployment: Deployment, host: AppHost) -> None:
        self.deployment, self.host = deployment, host
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> HeartbeatWatch:
        self._task = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _watch(self) -> None:
        while True:  # the hosts share this machine's clock: beats and now compare
            rows = await self.deployment.sql(
                "SELECT EXTRACT(EPOCH FROM clock_timestamp() - beat_at) FROM runner_heartbeats"
                " WHERE split_part(owner, ':', 2) = :pid",
                pid=str(self.host.pid),
            )
            if rows:
                self.longest = max(self.longest, float(rows[0][0]))
            await asyncio.sleep(0.1)


def report(scenario: str, transport: str, seconds: float, note: str = "") -> None:
    """One line per scenario, shown by `pytest -n 0 -s` and collected in docs/benchmarks.md."""
    line = f"RECOVERY {scenario} [{transport}]: {seconds:.1f} s"
    print(f"\n{line}{' (' + note + ')' if note else ''}", flush=True)
