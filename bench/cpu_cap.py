"""A fixed CPU budget for one server process: a cgroup (v1 `cpu` controller, or v2) of
its own with a CFS quota, as a container's CPU limit sets it.

Why: on a 2-core machine the load (clients, fake model, PostgreSQL, Redis) takes one
core, so a second server process has no core to run on and "2 processes vs 1" measures
the machine. With every process held to the same fraction of a core, the comparison
measures what a deployment adding processes (each with its own CPU) would see: whether
the shared parts (the database, the run queue, Redis) let the work spread.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the kernel's default period, as container CPU limits use it


class CpuCapUnavailable(RuntimeError):
    """No writable cgroup CPU controller here (not root, or a read-only /sys/fs/cgroup)."""


def cap_process(pid: int, cores: float) -> Path:
    """Move `pid` (all its threads, and those it starts later) into a new cgroup limited to
    `cores` of one core per period; returns the cgroup's directory (`release` it)."""
    if cores <= 0:
        raise ValueError("cores must be > 0")
    quota = max(1000, int(PERIOD_US * cores))
    group = _new_group(f"bench-{pid}")
    try:
        if (group / "cpu.cfs_quota_us").exists():  # v1
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        (group / "cgroup.procs").write_text(str(pid))
    except OSError as error:
        release(group)
        raise CpuCapUnavailable(f"cannot cap CPU in {group}: {error}") from error
    return group


def release(group: Path) -> None:
    """Remove the group once its processes have exited (best effort)."""
    with contextlib.suppress(OSError):
        os.rmdir(group)


def _new_group(name: str) -> Path:
    if V1_ROOT.is_dir():
        root = V1_ROOT
    elif (V2_ROOT / "cgroup.controllers").exists():
        root = V2_ROOT
    else:
        raise CpuCapUnavailable("no cgroup cpu controller under /sys/fs/cgroup")
    group = root / name
    try:
        group.mkdir(exist_ok=True)
    except OSError as error:
        raise CpuCapUnavailable(f"cannot create {group}: {error}") from error
    return group
