"""Hosts on one machine: network namespaces on a bridge, and the faults between them.

    data  (namespace)  PostgreSQL and Redis          10.N.M.1
    app1  (namespace)  a server process              10.N.M.2
    app2  (namespace)  a server process              10.N.M.3
    clients            this test process             10.N.M.4  (the bridge's own address)
    model              the fake model server         10.N.M.5  (a second bridge address)

Each namespace has one veth link whose other end is a port of a bridge in the root
namespace. The clients and the model are not namespaces: they are this pytest process
(its websocket clients and its in-process fake model server), reached through the
bridge's two addresses, so the tests' clients are ordinary in-process clients and every
fault stays inside the namespaces; the root namespace only gets the bridge, removed
afterwards.

Faults are nftables rules in the namespaces, rebuilt whole on every change:
- `cut(a, b)`: packets from the other host are dropped on input, on both sides: a
  silent partition (no reset, no ICMP), as a pulled cable. Against the clients or the
  model (no namespace of theirs to drop in), the namespace's output to them is dropped too.
- `cut_service(a, b, port)`: the same for one service of b's (Redis, not PostgreSQL).
- `lossy(a, b, percent)`: the same for a random share of the packets (`numgen random`).
This kernel has no `netem` (nor any `tc` qdisc that delays); delay is a userspace
relay in the app host's namespace (tests/hosts/lag.py) its database traffic goes through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field

from tests.support import pg_cluster

NAMESPACED = ("data", "app1", "app2")
OUTSIDE = ("clients", "model")  # addresses of this process, on the bridge
_HOST_NUMBER = {"data": 1, "app1": 2, "app2": 3, "clients": 4, "model": 5}


def missing() -> str | None:
    """Why hosts cannot be built here (one line), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables"), ("redis-server", "redis")):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install {package})"
    if not pg_cluster.available():
        return "PostgreSQL's server binaries (initdb) are not installed"
    probe = f"tcprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*command: str, stdin: str | None = None) -> None:
    done = subprocess.run(command, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")


@dataclass
class Network:
    """The namespaces, their links and the faults in force."""

    tag: str = field(default_factory=lambda: str(os.getpid() % 100000))
    rules: dict[str, dict[tuple[str, ...], str]] = field(default_factory=lambda: defaultdict(dict))

    @property
    def subnet(self) -> str:
        number = int(self.tag)
        return f"10.{200 + number % 50}.{number // 50 % 250}"

    @property
    def bridge(self) -> str:
        return f"tcbr{self.tag}"

    def address(self, host: str) -> str:
        return f"{self.subnet}.{_HOST_NUMBER[host]}"

    def namespace(self, host: str) -> str:
        return f"tc{self.tag}-{host}"

    def exec(self, host: str) -> list[str]:
        """The command prefix that runs a program on `host`."""
        return ["ip", "netns", "exec", self.namespace(host)]

    # -- building and removing ---------------------------------------------------------
    def create(self) -> None:
        self.destroy()  # leftovers of a crashed run with the same pid
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.address('clients')}/24", "dev", self.bridge)
        _run("ip", "addr", "add", f"{self.address('model')}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for host in NAMESPACED:
            namespace, veth = self.namespace(host), f"tcv{self.tag}{host[0]}{host[-1]}"
            _run("ip", "netns", "add", namespace)
            _run(
                "ip",
                "link",
                "add",
                veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                namespace,
            )
            _run("ip", "link", "set", veth, "master", self.bridge, "up")
            _run("ip", "-n", namespace, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            _run("ip", "-n", namespace, "link", "set", "eth0", "up")
            _run("ip", "-n", namespace, "link", "set", "lo", "up")
            self._apply(host)

    def destroy(self) -> None:
        for host in NAMESPACED:  # a namespace's veth goes with it
            subprocess.run(["ip", "netns", "del", self.namespace(host)], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)

    # -- faults --------------------------------------------------------------------------
    def cut(self, a: str, b: str) -> None:
        self._drop(a, b, "drop")

    def cut_service(self, client: str, server: str, port: int) -> None:
        """Drop the traffic of one service (a port of `server`) to and from `client`:
        Redis cut off while PostgreSQL, on the same host, still answers."""
        self.rules[client][("input", server, port)] = (
            f"ip saddr {self.address(server)} tcp sport {port} drop"
        )
        self.rules[server][("input", client, port)] = (
            f"ip saddr {self.address(client)} tcp dport {port} drop"
        )
        self._apply(client)
        self._apply(server)

    def heal_service(self, client: str, server: str, port: int) -> None:
        self.rules[client].pop(("input", server, port), None)
        self.rules[server].pop(("input", client, port), None)
        self._apply(client)
        self._apply(server)

    def lossy(self, a: str, b: str, percent: int) -> None:
        self._drop(a, b, f"numgen random mod 100 < {percent} drop")

    def heal(self, a: str, b: str) -> None:
        for side, other in ((a, b), (b, a)):
            if side in NAMESPACED:
                self.rules[side].pop(("input", other), None)
                self.rules[side].pop(("output", other), None)
                self._apply(side)

    def heal_all(self) -> None:
        for host in NAMESPACED:
            self.rules[host].clear()
            self._apply(host)

    def _drop(self, a: str, b: str, verdict: str) -> None:
        for side, other in ((a, b), (b, a)):
            if side not in NAMESPACED:
                continue
            self.rules[side][("input", other)] = f"ip saddr {self.address(other)} {verdict}"
            if other in OUTSIDE:  # no namespace of theirs to drop their input in
                self.rules[side][("output", other)] = f"ip daddr {self.address(other)} {verdict}"
            self._apply(side)

    def _apply(self, host: str) -> None:
        """Replace the namespace's `chaos` table with the rules in force, atomically."""
        chains = []
        for hook in ("input", "output"):
            lines = [rule for key, rule in self.rules[host].items() if key[0] == hook]
            body = "".join(f"    {line}\n" for line in lines)
            chains.append(
                f"  chain {hook} {{\n    type filter hook {hook} priority 0; policy accept;\n"
                f"{body}  }}\n"
            )
        script = "table inet chaos\ndelete table inet chaos\ntable inet chaos {\n"
        _run(*self.exec(host), "nft", "-f", "-", stdin=script + "".join(chains) + "}\n")
