"""web.fetch happy paths and ordinary failures: readable text, caps, redirects, errors."""

from __future__ import annotations

import dataclasses

import pytest

from app.lib.net.fetch import FetchPolicy
from app.tools.builtin.web import WebTool
from tests.support.result_schemas import assert_matches_result_schema
from tests.tools.http_servers import Response, html, redirect
from tests.tools.web_support import WebEnv

PAGE = """<!doctype html><html><head><title>Release notes</title>
<style>body { color: red }</style><script>var secret = "do not show";</script></head>
<body><h1>Version 2</h1><p>Faster <b>tools</b> and <a href="/docs">docs</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""


@pytest.fixture
async def site(web: WebEnv, start_server):
    routes = {
        "/page": lambda r: html(PAGE),
        "/moved": lambda r: redirect("/page", 301),
        "/loop": lambda r: redirect("/loop"),
        "/missing": lambda r: html("nope", 404),
        "/plain": lambda r: Response(200, b"just text", {"Content-Type": "text/plain"}),
        "/json": lambda r: Response(200, b'{"a": 1}', {"Content-Type": "application/json"}),
        "/image": lambda r: Response(200, b"\x89PNG....", {"Content-Type": "image/png"}),
        "/long": lambda r: html("<p>" + "word " * 20_000 + "</p>"),
        "/big": lambda r: Response(200, b"x" * 5_000, {"Content-Type": "text/plain"}),
        "/huge": lambda r: Response(200, b"x" * 300_000, {"Content-Type": "text/plain"}),
        "/latin1": lambda r: Response(
            200, "café".encode("latin-1"), {"Content-Type": "text/plain; charset=iso-8859-1"}
        ),
        "/slow": lambda r: Response(hang=True),
    }
    server = await start_server(
        "127.0.0.3", lambda r: routes.get(r.path, lambda _: html("?", 404))(r)
    )
    web.resolver.table["site.test"] = ["127.0.0.3"]
    web.allow("site.test")
    return f"http://site.test:{server.port}", server


async def test_html_becomes_readable_text(web: WebEnv, site) -> None:
    base, _ = site
    result = await web.fetch(f"{base}/page")
    assert result.ok, result
    data = result.data
    assert data["type"] == "fetched_page" and data["title"] == "Release notes"
    assert "# Version 2" in data["content"] and "Faster tools and" in data["content"]
    assert "* one" in data["content"]
    assert "secret" not in data["content"] and "color: red" not in data["content"]
    assert data["truncated"] is False and data["fetched_at"]
    assert data["status"] == 200 and data["redirects"] == []
    assert web.harness.progress.calls[0]["display_message"] == "Fetching page…"
    received = web.harness.progress.calls[-1]  # bytes received, as the body arrived
    assert received["display_message"].startswith("Received ")
    assert received["data"]["bytes_received"] == len(PAGE.encode())
    assert web.harness.events.kinds()[-1] == "end"
    assert result.preview == ["Release notes", f"{base}/page"]


async def test_redirects_are_followed_and_reported(web: WebEnv, site) -> None:
    base, _ = site
    result = await web.fetch(f"{base}/moved")
    assert result.ok and result.data["url"] == f"{base}/page"
    assert result.data["redirects"] == [f"{base}/page"]
    assert result.data["requested_url"] == f"{base}/moved"


async def test_redirect_loop_is_bounded(web: WebEnv, site) -> None:
    base, server = site
    result = await web.fetch(f"{base}/loop")
    assert result.error_type == "user_error" and "Too many redirects" in result.error
    assert server.hits == 6  # the first request and five redirects


async def test_http_errors_and_non_text(web: WebEnv, site) -> None:
    base, _ = site
    missing = await web.fetch(f"{base}/missing")
    assert missing.error_type == "user_error" and "HTTP 404" in missing.error
    image = await web.fetch(f"{base}/image")
    assert image.error_type == "user_error" and "image/png" in image.error


async def test_text_and_json_pass_through(web: WebEnv, site) -> None:
    base, _ = site
    assert (await web.fetch(f"{base}/plain")).data["content"] == "just text"
    assert (await web.fetch(f"{base}/json")).data["content"] == '{"a": 1}'
    assert (await web.fetch(f"{base}/latin1")).data["content"] == "café"


async def test_content_is_capped_at_40000_characters(web: WebEnv, site) -> None:
    base, _ = site
    result = await web.fetch(f"{base}/long")
    assert len(result.data["content"]) == 40_000 and result.data["truncated"] is True


async def test_response_size_cap(web: WebEnv, site, use_tools) -> None:
    base, _ = site
    use_tools(
        WebTool(resolver=web.resolver, policy=FetchPolicy(allowed_ports=None, max_bytes=1000))
    )
    result = await web.fetch(f"{base}/big")
    assert result.ok and result.data["truncated"] is True
    assert len(result.data["content"]) == 1000
    # A declared length far past the cap is refused without reading the body.
    huge = await web.fetch(f"{base}/huge")
    assert huge.error_type == "user_error" and "too large" in huge.error


async def test_time_cap(web: WebEnv, site, use_tools) -> None:
    base, _ = site
    policy = FetchPolicy(allowed_ports=None, read_timeout=0.2, total_timeout=0.5)
    use_tools(WebTool(resolver=web.resolver, policy=policy))
    result = await web.fetch(f"{base}/slow")
    assert result.error_type == "timeout" and "too long" in result.error


async def test_unresolvable_host_and_bad_urls(web: WebEnv) -> None:
    unknown = await web.fetch("https://no-such-host.test/")
    assert unknown.error_type == "user_error" and "resolve" in unknown.error
    for url in ("not a url", "http://", "https://exa mple.com/"):
        result = await web.fetch(url)
        assert result.error_type in ("validation_error", "user_error"), (url, result)
        assert result.error_type != "system_error"


async def test_missing_url_is_a_param_error(web: WebEnv) -> None:
    result = await web.harness.call("web", {"action": "fetch"})
    assert result.error == "url is required for fetch action."
    assert result.details["required_param"] == "url"


async def test_allow_hosts_come_from_settings(web: WebEnv, site) -> None:
    base, _ = site
    harness = web.harness
    harness.ctx.settings = dataclasses.replace(harness.ctx.settings, web_fetch_allow_hosts=())
    result = await web.fetch(f"{base}/page")
    assert result.error_type == "security_error"


async def test_a_fetched_page_matches_the_published_schema(web: WebEnv, site) -> None:
    base, _ = site
    for path in ("/moved", "/plain"):
        result = await web.fetch(f"{base}{path}")
        assert result.ok, result
        assert_matches_result_schema("web", "fetch", result.data)
