"""The client's address as the app should count it: the socket's peer, or, when that peer
is a trusted proxy, the address the proxies say they forwarded for.

Behind a load balancer every request comes from the proxy, so per-address limits (login
throttling) would share one budget among all users. `X-Forwarded-For` is taken only from
a peer listed in `TRUSTED_PROXIES`: from anyone else it is a header a client can forge.
The header is read from the right (the hop nearest us) past every trusted proxy: the
first untrusted address is the one a trusted hop saw connect.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from litestar.connection import ASGIConnection

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
UNKNOWN = "unknown"


def parse_networks(values: Sequence[str]) -> tuple[Network, ...]:
    """Addresses or CIDR ranges (`10.0.0.0/8`, `::1`); a ValueError names a bad one."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address or CIDR range") from None
    return tuple(networks)


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(connection: ASGIConnection, trusted: tuple[Network, ...]) -> str:
    peer = connection.client.host if connection.client else UNKNOWN
    if not trusted or not _trusted(peer, trusted):
        return peer
    forwarded = ",".join(connection.headers.getall("x-forwarded-for", []))
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, trusted):
            return hop
    return hops[0] if hops else peer
