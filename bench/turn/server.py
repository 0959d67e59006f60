"""The server under test: `uvicorn --factory bench.turn.server:create` (the app as
deployed), and the processes the benchmark starts and measures.

With `BENCH_PROFILE=<path>` the server profiles itself with cProfile between SIGUSR1
(start) and SIGUSR2 (stop, write `<path>`), so warm-up and start-up stay out of it;
`BENCH_PROFILE_TIMER=thread` times the event loop thread's CPU instead of the wall clock.
"""

from __future__ import annotations

import cProfile
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from litestar import Litestar

from app import create_app
from app.settings import PROJECT_ROOT
from bench.common import wait_ready
from bench.cpu_cap import cap_process, release

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def server_env(database_url: str, model_url: str, **extra: str) -> dict[str, str]:
    """The environment of benchmark servers: this database, the fake model, channels of
    their own (a fresh prefix), no access log; `extra` on top."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "LLM_MODEL": "openai/fake-model",
        "LLM_API_BASE": model_url,
        "LLM_API_KEY": "bench",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "CHANNELS_PREFIX": f"bench-{uuid.uuid4().hex[:8]}:",
        "ACCESS_LOG": "false",  # uvicorn's --no-access-log, which the app overrides
        **extra,
    }


def create() -> Litestar:
    app = create_app()
    path = os.environ.get("BENCH_PROFILE")
    if path:
        app.on_startup.append(lambda: _install_profiler(path))
    return app


def _install_profiler(path: str) -> None:
    import asyncio

    if path.endswith(".txt"):  # pyinstrument (sampling), if installed: a readable tree
        _install_pyinstrument(path)
        return
    # BENCH_PROFILE_TIMER=thread: the event loop thread's CPU time, not the wall clock
    # (which, on a busy machine, charges every call that gives up the GIL with the wait)
    thread_cpu = os.environ.get("BENCH_PROFILE_TIMER") == "thread"
    profiler = cProfile.Profile(time.thread_time) if thread_cpu else cProfile.Profile()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, profiler.enable)

    def stop() -> None:
        profiler.disable()
        profiler.dump_stats(path)

    loop.add_signal_handler(signal.SIGUSR2, stop)


def _install_pyinstrument(path: str) -> None:
    import asyncio

    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005, async_mode="disabled")
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, profiler.start)

    def stop() -> None:
        profiler.stop()
        with open(path, "w") as out:
            out.write(profiler.output_text(unicode=False, show_all=False))

    loop.add_signal_handler(signal.SIGUSR2, stop)


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    base: str

    def cpu_seconds(self) -> float:
        """User + system CPU of the process (every thread) so far, from /proc."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@asynccontextmanager
async def servers(
    env: dict[str, str],
    ports: list[int],
    cpu_cap: float | None = None,
    wrapper: Sequence[str] = (),
    factory: str = "bench.turn.server:create",
) -> AsyncIterator[list[ServerProcess]]:
    """Server processes sharing `env` (one per port), once all are healthy; with `cpu_cap`,
    each held to that fraction of one core (`bench.cpu_cap`); `wrapper`: the command each
    runs under (valgrind: `bench.turn.instructions`); `factory`: the app each serves."""
    started: list[ServerProcess] = []
    groups = []
    try:
        for port in ports:
            command = [
                *wrapper,
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                factory,
            ]
            command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
            command += ["--log-level", "warning"]
            # Above the clients' idle time between requests (a turn's seconds): with
            # uvicorn's 5 s default a client POSTing on a connection the server is just
            # closing gets "connection reset" (docs/operations.md, "Serving").
            command += ["--timeout-keep-alive", "75"]
            process = subprocess.Popen(  # noqa: ASYNC220 - started once, before measuring
                command,
                cwd=PROJECT_ROOT,
                env=env,
                stderr=None if os.environ.get("BENCH_SERVER_LOGS") else subprocess.DEVNULL,
            )
            started.append(ServerProcess(process, f"http://127.0.0.1:{port}"))
            if cpu_cap:
                groups.append(cap_process(process.pid, cpu_cap))
        for server in started:
            wait_ready(f"{server.base}/api/health", server.process, timeout=300)
        yield started
    finally:
        for server in started:
            server.process.terminate()
        for server in started:
            try:
                server.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait()
        for group in groups:
            release(group)
