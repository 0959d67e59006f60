"""Resident memory of server processes as /proc shows it, of a process and everything it
started (LangGraph's server runs children). Their CPU: `ServerProcess.cpu_seconds`,
`LangGraphServer.cpu_seconds`."""

from __future__ import annotations

import os


def tree(root: int) -> list[int]:
    """`root` and its descendants alive now."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # ended meanwhile
            continue
        parents.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total
