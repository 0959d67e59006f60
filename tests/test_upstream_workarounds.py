"""Workarounds of a dependency's bug, each with a test that fails once upstream fixes it:
then drop the workaround and this test."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from advanced_alchemy.types import JsonB
from litestar import Litestar, get, patch
from litestar.testing import TestClient

from app.lib.allow_header import AllowHeaderMiddleware
from app.lib.head_requests import answer_head_as_get


def test_advanced_alchemys_jsonb_still_breaks_on_this_sqlalchemy() -> None:
    """app/db/base.py defines `JsonB` itself (JSON, JSONB on PostgreSQL): advanced-alchemy's
    own calls `sqlalchemy.util.portable_instancemethod` for its Oracle variant, which
    SQLAlchemy 2.1 removed, as soon as a table has the column. When this test fails,
    advanced-alchemy is fixed: import its `JsonB` in app/db/base.py again."""
    with pytest.raises(AttributeError, match="portable_instancemethod"):
        sa.Table("workaround_probe", sa.MetaData(), sa.Column("data", JsonB))


def _two_handlers_of_one_path() -> list[Any]:
    @get("/thing", sync_to_thread=False)
    def read() -> None:
        return None

    @patch("/thing", sync_to_thread=False)
    def change() -> None:
        return None

    return [read, change]


def test_litestars_options_answer_still_names_one_handlers_methods() -> None:
    """app/lib/allow_header.py writes OPTIONS' `Allow` itself: Litestar 2 names only the
    first handler's methods of a path served by several (litestar-org/litestar#4169). When
    this test fails, Litestar is fixed: drop the middleware (app/asgi.py) and its module."""

    with TestClient(Litestar(route_handlers=_two_handlers_of_one_path())) as client:
        allow = set(client.options("/thing").headers["allow"].split(", "))
    assert allow != {"GET", "PATCH", "OPTIONS"}


def test_the_workaround_names_every_method_of_the_path() -> None:
    app = Litestar(route_handlers=_two_handlers_of_one_path(), middleware=[AllowHeaderMiddleware()])
    with TestClient(app) as client:
        assert client.options("/thing").headers["allow"] == "GET, HEAD, OPTIONS, PATCH"
        assert client.get("/thing").status_code == 200  # other methods pass untouched


def test_litestar_still_refuses_head_on_a_get_route() -> None:
    """app/lib/head_requests.py answers HEAD as the GET without its body: Litestar 2 makes
    no HEAD of a GET (405). When this test fails, Litestar answers HEAD by itself: build a
    drop `answer_head_as_get` from app/asgi.py and its module."""
    with TestClient(Litestar(route_handlers=_two_handlers_of_one_path())) as client:
        assert client.head("/thing").status_code == 405


def test_the_workaround_answers_head_as_get_without_the_body() -> None:
    @get("/words", sync_to_thread=False)
    def words() -> dict[str, str]:
        return {"hello": "world"}

    with TestClient(answer_head_as_get(Litestar(route_handlers=[words]))) as client:
        got, head = client.get("/words"), client.head("/words")
        assert (head.status_code, head.content) == (200, b"")
        assert head.headers["content-length"] == str(len(got.content)) != "0"
        assert head.headers["content-type"] == got.headers["content-type"]
        assert client.head("/nowhere").status_code == 404
