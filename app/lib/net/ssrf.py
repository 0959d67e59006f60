"""Which URLs and addresses a fetch may reach (SSRF policy).

Refused: other schemes than http/https, credentials in the URL, ports outside the allowed
set, `localhost` names, and any host that is or resolves to a loopback, private,
link-local, CGNAT, multicast, reserved, documentation or unspecified address, in IPv4 or
IPv6 (IPv4-mapped/compatible IPv6 included). IPv4 literals are read the way the C
resolver reads them (decimal `2130706433`, octal `0177.0.0.1`, hex `0x7f.1`, short
`127.1`), so no spelling slips past. Hosts in WEB_FETCH_ALLOW_HOSTS are exempt from the
address and port checks (scheme and credential checks still apply).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
DEFAULT_ALLOWED_PORTS = frozenset({80, 443, 8080, 8443})
MAX_URL_LENGTH = 2048

_BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(net)
    for net in (
        # IPv4
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        # IPv6 (mapped ::ffff:0:0/96 is unwrapped and judged as IPv4 before this list)
        "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
        "2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    )
)  # fmt: skip
_LEGACY_IPV4 = re.compile(r"[0-9a-fA-FxX.]+")


class FetchBlocked(Exception):
    """The URL or the address it leads to may not be fetched (-> security_error)."""


@dataclass(frozen=True)
class Target:
    url: httpx.URL
    host: str  # lowercase ASCII (IDNA) without brackets or trailing dot
    port: int
    literal_ip: IPAddress | None  # the host was an address, not a name
    allow_listed: bool


def normalize_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host string denotes, in any spelling a resolver accepts, else None."""
    bare = normalize_host(host).split("%", 1)[0]  # drop an IPv6 zone id
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if bare and _LEGACY_IPV4.fullmatch(bare) and any(c.isdigit() for c in bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def blocked_reason(address: IPAddress) -> str | None:
    """Why an address is off limits, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return blocked_reason(address.ipv4_mapped)
    if address.is_loopback:
        return "loopback"
    if address.is_unspecified:
        return "unspecified"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if any(address in net for net in _BLOCKED_NETWORKS if net.version == address.version):
        return "private or reserved"
    if address.is_private or address.is_reserved or not address.is_global:
        return "private or reserved"
    return None


def check_url(
    raw_url: str, allow_hosts: frozenset[str], allowed_ports: frozenset[int] | None
) -> Target:
    """Parse and vet a URL before any network access; raises FetchBlocked or ValueError."""
    if len(raw_url) > MAX_URL_LENGTH:
        raise ValueError(f"URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        url = httpx.URL(raw_url.strip())
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        _refuse_unparsable_address(raw_url)
        raise ValueError(f"Invalid URL: {exc}") from None
    if not url.scheme:
        raise ValueError("Invalid URL: it has no scheme (start it with https://).")
    if url.scheme not in ("http", "https"):
        raise FetchBlocked("Only http and https URLs can be fetched.")
    if url.userinfo:
        raise FetchBlocked("URLs with credentials (user:password@) are not fetched.")
    if not url.host:
        raise ValueError("Invalid URL: it has no host.")
    host = normalize_host(url.raw_host.decode("ascii"))
    if "%" in host and parse_ip_literal(host) is None:
        _refuse_encoded_host(host)
    port = url.port or (443 if url.scheme == "https" else 80)
    allow_listed = host in allow_hosts
    literal = parse_ip_literal(host)
    if not allow_listed:
        if allowed_ports is not None and port not in allowed_ports:
            raise FetchBlocked(f"Port {port} is not allowed; use {sorted(allowed_ports)}.")
        if host == "localhost" or host.endswith(".localhost"):
            raise FetchBlocked("Local addresses cannot be fetched.")
        if literal is not None and (reason := blocked_reason(literal)):
            raise FetchBlocked(f"The address is {reason}; only public addresses can be fetched.")
    return Target(url=url, host=host, port=port, literal_ip=literal, allow_listed=allow_listed)


def _refuse_encoded_host(host: str) -> None:
    """A percent-encoded host: blocked if it decodes to a blocked address, invalid otherwise
    (never fetched either way: resolvers and URL parsers disagree about such names)."""
    literal = parse_ip_literal(unquote(host))
    if literal is not None and (reason := blocked_reason(literal)):
        raise FetchBlocked(f"The address is {reason}; only public addresses can be fetched.")
    raise ValueError(f"Invalid URL: the host {unquote(host)!r} is not a valid host name.")


def _refuse_unparsable_address(raw_url: str) -> None:
    """httpx rejects some legacy spellings (e.g. octal `0177.0.0.1`) that resolvers accept:
    say plainly that the address is blocked rather than just "invalid"."""
    try:
        host = urlsplit(raw_url.strip()).hostname or ""
    except ValueError:
        return
    literal = parse_ip_literal(host)
    if literal is not None and (reason := blocked_reason(literal)):
        raise FetchBlocked(f"The address is {reason}; only public addresses can be fetched.")


def check_resolved(target: Target, addresses: list[str]) -> IPAddress:
    """The address to connect to: every resolved address must be public (a host that
    resolves to one public and one private address is refused)."""
    parsed = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]
    if not parsed:
        raise ValueError(f"Could not resolve {target.host}.")
    if not target.allow_listed:
        for address in parsed:
            if reason := blocked_reason(address):
                raise FetchBlocked(
                    f"{target.host} resolves to a {reason} address; only public addresses can be fetched."
                )
    return parsed[0]
