"""Instructions per turn, counted by valgrind's callgrind: a measure of the server's work
that the machine's load does not move, for deciding whether a change saves CPU when
timings drift by more than the change (`bench.turn --instructions`).

The server runs under callgrind with instrumentation off (start-up at a few times slower
than native, not fifty); `callgrind_control` turns it on for the measured turns and dumps
the count after them. Only the count is meaningful: under valgrind the server runs tens of
times slower, so its timings are not. The idle server is counted first over a few seconds:
its periodic work, proportional to seconds and not to runs, is then taken out.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_TOTALS = re.compile(rb"^(?:totals|summary):\s*(\d+)", re.MULTILINE)


def wrapper(out_dir: Path) -> list[str]:
    """The command prefix: callgrind, instrumentation off until `start`."""
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out_dir / 'callgrind.%p'}",
    ]


def start(pid: int) -> None:
    _control("--instr=on", pid)


def stop(pid: int, out_dir: Path) -> int:
    """Dump the count so far and return the instructions executed since `start` (the
    dumps read are removed: the next `stop` counts from its own `start`)."""
    _control("--dump", pid)
    _control("--instr=off", pid)
    total = 0
    for dump in out_dir.glob(f"callgrind.{pid}*"):
        if match := _TOTALS.search(dump.read_bytes()):
            total += int(match.group(1))
        dump.unlink()
    return total


def per_run(total: int, runs: int, idle: int, idle_seconds: float, seconds: float) -> str:
    """The count per run, and beyond the idle server's: the server's own periodic work
    (pollers, probes) runs per second, and under callgrind a run takes tens of times its
    native seconds, so a slower run would otherwise count more of it."""
    runs = max(1, runs)
    rate = idle / idle_seconds
    beyond = (total - rate * seconds) / runs
    return (
        f"{total / runs / 1e6:.2f} M instructions per run (callgrind, {runs} runs); "
        f"idle {rate / 1e6:.2f} M/s: {beyond / 1e6:.2f} M per run beyond it"
    )


def _control(option: str, pid: int) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True)
