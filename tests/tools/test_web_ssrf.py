"""The fetch SSRF guard: every case must fail with security_error and never reach a canary.

Canaries listen on 127.0.0.1, 127.0.0.2 and ::1 (same port). The web tool under test
allows any port, so only the address checks stand between these URLs and the canaries.
Addresses outside loopback are checked as policy only (tests never connect off-box).
"""

from __future__ import annotations

import ipaddress

import pytest

from app.lib.net.ssrf import (
    FetchBlocked,
    blocked_reason,
    check_resolved,
    check_url,
    parse_ip_literal,
)
from tests.tools.http_servers import html, redirect
from tests.tools.web_support import WebEnv

# {port} is the canaries' port.
LOOPBACK_SPELLINGS = [
    "http://127.0.0.1:{port}/",
    "http://127.0.0.2:{port}/",
    "http://[::1]:{port}/",
    "http://2130706433:{port}/",  # decimal
    "http://0x7f000001:{port}/",  # hex, whole
    "http://0x7f.0.0.1:{port}/",  # hex, dotted
    "http://0x7F.0x0.0x0.0x1:{port}/",
    "http://0177.0.0.1:{port}/",  # octal, dotted
    "http://017700000001:{port}/",  # octal, whole
    "http://0177.0000.0000.0001:{port}/",
    "http://127.1:{port}/",  # short forms
    "http://127.0.1:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",  # IPv4-mapped IPv6
    "http://[::ffff:7f00:1]:{port}/",
    "http://[0:0:0:0:0:ffff:127.0.0.1]:{port}/",
    "http://[::127.0.0.1]:{port}/",  # IPv4-compatible IPv6
    "http://0.0.0.0:{port}/",
    "http://0:{port}/",
    "http://[::]:{port}/",
    "http://localhost:{port}/",
    "http://LOCALHOST.:{port}/",
    "http://api.localhost:{port}/",
    "http://127.0.0.1.:{port}/",  # trailing dot
    "http://%31%32%37.0.0.1:{port}/",  # percent-encoded host
    "HTTP://127.0.0.1:{port}/",
    "http://[0000::1]:{port}/",
    "http://127。0。0。1:{port}/",  # ideographic full stops (IDNA label separators)
    "http://0x7f.1.:{port}/",
    "http://[::ffff:127.0.0.2]:{port}/",
]


@pytest.mark.parametrize("template", LOOPBACK_SPELLINGS)
async def test_loopback_spellings_never_reach_the_canary(web: WebEnv, template: str) -> None:
    result = await web.fetch(template.format(port=web.canaries[0].port))
    assert result.error_type == "security_error", result
    assert web.canary_hits == 0
    assert web.resolver.calls == []  # decided from the URL alone


# Resolved names: the stub resolver returns these for "evil.test" (loopback only, so a
# broken guard would hit a canary, never an address off this machine).
RESOLVED_TO_LOOPBACK = [
    ["127.0.0.1"],
    ["127.0.0.2"],
    ["::1"],
    ["::ffff:127.0.0.1"],
    ["::ffff:7f00:2"],
    ["0.0.0.0"],
    ["::"],
    ["127.0.0.2", "127.0.0.1"],
]


@pytest.mark.parametrize("answer", RESOLVED_TO_LOOPBACK, ids=lambda a: ",".join(a))
async def test_names_resolving_to_private_addresses(web: WebEnv, answer: list[str]) -> None:
    web.resolver.table["evil.test"] = answer
    result = await web.fetch(f"http://evil.test:{web.canaries[0].port}/")
    assert result.error_type == "security_error", result
    assert "resolves to" in result.error
    assert web.canary_hits == 0 and web.resolver.calls == ["evil.test"]


@pytest.mark.parametrize(
    "answer",
    [
        ["8.8.8.8", "10.0.0.1"],  # one public and one private answer: refused
        ["10.0.0.1", "8.8.8.8"],
        ["169.254.169.254"],  # cloud metadata
        ["10.1.2.3"],
        ["172.20.0.5"],
        ["192.168.0.10"],
        ["100.100.100.200"],
        ["fd00::1"],
        ["fe80::1%eth0"],
        ["::ffff:192.168.1.1"],
    ],
    ids=lambda a: ",".join(a),
)
def test_resolved_private_addresses_are_refused_before_connecting(answer: list[str]) -> None:
    target = check_url("http://evil.test/", frozenset(), None)
    with pytest.raises(FetchBlocked, match="resolves to"):
        check_resolved(target, answer)
    assert str(check_resolved(target, ["8.8.8.8", "1.1.1.1"])) == "8.8.8.8"


REDIRECT_TARGETS = [
    "http://127.0.0.1:{port}/",
    "http://2130706433:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://evil.test:{port}/",
    "//127.0.0.2:{port}/",  # scheme-relative
    "http://localhost:{port}/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:{port}/",
    "http://user:pw@trusted.test:{port}/",
]


@pytest.mark.parametrize("location", REDIRECT_TARGETS)
async def test_redirects_into_private_ranges_are_blocked(
    web: WebEnv, start_server, location: str
) -> None:
    port = web.canaries[0].port
    # A trusted (allow-listed) server on another loopback address redirects into a canary.
    trusted = await start_server("127.0.0.3", lambda r: redirect(location.format(port=port)))
    web.resolver.table["trusted.test"] = ["127.0.0.3"]
    web.resolver.table["evil.test"] = ["127.0.0.1"]
    web.allow("trusted.test")
    result = await web.fetch(f"http://trusted.test:{trusted.port}/start")
    assert result.error_type == "security_error", result
    assert trusted.hits == 1 and web.canary_hits == 0


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "gopher://example.com/",
        "javascript:alert(1)",
        "data:text/html,<h1>x</h1>",
        "ws://example.com/",
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "http://127.0.0.1:80@example.com/",
        "http://example.com\\@127.0.0.1/",
    ],
)
async def test_other_schemes_and_credentials(web: WebEnv, url: str) -> None:
    result = await web.fetch(url)
    assert result.error_type == "security_error", result
    assert web.resolver.calls == []


async def test_odd_ports_are_refused_by_default(harness, use_tools) -> None:
    from app.tools.builtin.web import WebTool
    from tests.tools.web_support import StubResolver

    resolver = StubResolver({"example.com": ["93.184.216.34"]})
    use_tools(WebTool(resolver=resolver))
    for port in (22, 25, 5432, 6379, 11211):
        result = await harness.call(
            "web", {"action": "fetch", "url": f"http://example.com:{port}/"}
        )
        assert result.error_type == "security_error" and f"Port {port}" in result.error
    assert resolver.calls == []


async def test_dns_rebinding_connects_to_the_checked_address(web: WebEnv, start_server) -> None:
    """The name is resolved once; the connection goes to that address with the original
    Host header. The second answer (a canary) is never used, and a re-resolution through
    the system resolver would fail, since `rebind.test` does not exist."""
    good = await start_server("127.0.0.3", lambda r: html(f"<p>host={r.headers['host']}</p>"))
    web.resolver.table["rebind.test"] = [["127.0.0.3"], ["127.0.0.1"]]
    web.allow("rebind.test")
    result = await web.fetch(f"http://rebind.test:{good.port}/")
    assert result.ok, result
    assert f"host=rebind.test:{good.port}" in result.data["content"]
    assert web.resolver.calls == ["rebind.test"] and web.canary_hits == 0


async def test_tls_keeps_sni_and_verifies_the_name(web: WebEnv, start_server) -> None:
    from tests.tools.web_support import server_context

    secure = await start_server(
        "127.0.0.3",
        lambda r: html("<title>Secure</title><p>over TLS</p>"),
        ssl_context=server_context(web.ca, "secure.test"),
    )
    web.resolver.table["secure.test"] = ["127.0.0.3"]
    web.resolver.table["wrong.test"] = ["127.0.0.3"]
    web.allow("secure.test", "wrong.test")
    result = await web.fetch(f"https://secure.test:{secure.port}/")
    assert result.ok, result
    assert result.data["title"] == "Secure" and secure.sni_names == ["secure.test"]
    assert secure.requests[0].headers["host"] == f"secure.test:{secure.port}"
    mismatch = await web.fetch(f"https://wrong.test:{secure.port}/")
    assert mismatch.error_type == "user_error"  # certificate is not for wrong.test


async def test_allow_listed_hosts_are_exempt(web: WebEnv) -> None:
    web.allow("127.0.0.2")
    result = await web.fetch(f"http://127.0.0.2:{web.canaries[0].port}/")
    assert result.ok and "CANARY" in result.data["content"]
    assert web.canaries[1].hits == 1 and web.canaries[0].hits == 0


BLOCKED_ADDRESSES = [
    "10.0.0.1", "172.16.5.4", "172.31.255.255", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "100.127.255.254", "127.255.255.254", "0.1.2.3", "224.0.0.1",
    "239.255.255.250", "240.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.1",
    "192.0.0.8", "203.0.113.9", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0",
    "ff02::1", "ff05::2", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a00:1",
    "2002:7f00:1::", "2001:db8::1", "2001::1", "::127.0.0.1", "::", "::1",
    "167772161",  # 10.0.0.1 as a decimal
    "0xa9fea9fe",  # 169.254.169.254 in hex
    "0251.0376.0251.0376",  # 169.254.169.254 in octal
    "0xc0.0xa8.1",  # 192.168.0.1 short hex
    "3232235777",  # 192.168.1.1
]  # fmt: skip


@pytest.mark.parametrize("host", BLOCKED_ADDRESSES)
def test_blocked_addresses(host: str) -> None:
    address = parse_ip_literal(host)
    assert address is not None and blocked_reason(address) is not None
    url_host = f"[{host}]" if ":" in host else host
    if "%" not in host:
        with pytest.raises(FetchBlocked):
            check_url(f"http://{url_host}/", frozenset(), None)


@pytest.mark.parametrize(
    "host", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_addresses_pass(host: str) -> None:
    assert blocked_reason(ipaddress.ip_address(host)) is None
    url_host = f"[{host}]" if ":" in host else host
    assert check_url(f"https://{url_host}/", frozenset(), None).literal_ip is not None
