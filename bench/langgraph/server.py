"""`langgraph dev` (LangGraph Agent Server, in-memory runtime) as the turn benchmark's
point of comparison: started from a venv of its own, serving `bench/langgraph/graph.py`,
measured like our server (user + system CPU from /proc).

Settings, and why:
- `--no-browser --no-reload`: no Studio tab; no file watcher (a reloader is a second
  process that restarts the server, not part of serving).
- `--n-jobs-per-worker 10`: `langgraph dev` passes 1 when the flag is absent, which runs
  one run at a time; 10 is langgraph-api's own default (`N_JOBS_PER_WORKER`, and what
  the flag's help states), so 8 clients' runs overlap as they do on our server.
- `LANGGRAPH_CLI_NO_ANALYTICS=1`, `LANGGRAPH_NO_VERSION_CHECK=true`: no calls to the
  internet at start-up; neither touches serving.
Everything else is its default. In particular the in-memory queue (langgraph-runtime-inmem
0.36, `queue.py` / `ops.Runs.next`) polls for pending runs: after a poll that found none it
sleeps 0.5 s, and takes only runs created before that sleep began; there is no setting
for it (`N_JOBS_PER_WORKER`, `BG_JOB_*`, `STATS_INTERVAL_SECS` do not change it), so a
run on an idle server waits 0.5-1 s to start (its log: `run_queue_ms` ~950, then
`run_exec_ms` ~35). `launch.py` wakes the queue when a run is created instead, as our
goals were set ("queue woken at once"); `BENCH_LANGGRAPH_WAKE=0` measures the poll as it
ships. Also default: BlockBuster checks every run for blocking calls (a development aid;
`BENCH_LANGGRAPH_ALLOW_BLOCKING=1` passes `--allow-blocking`, which turns it off), and
the in-memory state is pickled to `.langgraph_api/` (a temporary directory) every 10 s.

Its logs go nowhere unless `BENCH_SERVER_LOGS=1`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.common import wait_ready
from bench.rest.__main__ import free_port

GRAPH = Path(__file__).with_name("graph.py")
LAUNCH = Path(__file__).with_name("launch.py")  # the `langgraph` command
GRAPH_ID = "agent"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class LangGraphServer:
    process: subprocess.Popen[bytes]
    base: str

    def cpu_seconds(self) -> float:
        """User + system CPU of the server and every process under it, from /proc (with
        the CPU of children already reaped, which their parent's stat carries)."""
        stats = _proc_stats()
        tree, total = [self.process.pid], 0
        while tree:
            pid = tree.pop()
            if pid in stats:
                total += stats[pid][1]
                tree += [child for child, (parent, _) in stats.items() if parent == pid]
        return total / CLOCK_TICKS


def _proc_stats() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, utime + stime + cutime + cstime in ticks) of every process."""
    stats = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        stats[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    return stats


def _config_dir() -> str:
    """A temporary directory with `langgraph.json` and a copy of the graph."""
    directory = tempfile.mkdtemp(prefix="bench-langgraph-")
    shutil.copy(GRAPH, Path(directory, "graph.py"))
    config = {"dependencies": ["."], "graphs": {GRAPH_ID: "./graph.py:graph"}}
    Path(directory, "langgraph.json").write_text(json.dumps(config))
    return directory


@contextmanager
def langgraph_server(venv: str, model_url: str, jobs: int = 10) -> Iterator[LangGraphServer]:
    """`langgraph dev` from `venv` on a free port, once it answers `/ok`; stopped (its
    whole process group) on exit. `jobs`: runs at once (`--n-jobs-per-worker`)."""
    directory, port = _config_dir(), free_port()
    command = [str(Path(venv, "bin", "python")), str(LAUNCH), "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n-jobs-per-worker", str(jobs)]
    if os.environ.get("BENCH_LANGGRAPH_ALLOW_BLOCKING") == "1":
        command.append("--allow-blocking")
    env = {**os.environ, "BENCH_MODEL_URL": model_url, "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    env["LANGGRAPH_NO_VERSION_CHECK"] = "true"
    logs = None if os.environ.get("BENCH_SERVER_LOGS") else subprocess.DEVNULL
    process = subprocess.Popen(
        command, cwd=directory, env=env, stdout=logs, stderr=logs, start_new_session=True
    )
    try:
        server = LangGraphServer(process, f"http://127.0.0.1:{port}")
        wait_ready(f"{server.base}/ok", server.process, timeout=120)
        yield server
    finally:
        _stop(process)
        shutil.rmtree(directory, ignore_errors=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group (the server and anything it started), then SIGKILL."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
