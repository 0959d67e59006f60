"""The API docs page, served entirely by the app: it renders without internet access.

Litestar's Swagger plugin loads swagger-ui from a CDN by default, which leaves a blank
page on an offline laptop or a locked-down network. The assets come from the
`swagger-ui-py` distribution instead (swagger-ui 5, which renders OpenAPI 3.1), served
under `/schema/assets/`, and the websocket protocol's AsyncAPI document sits next to the
OpenAPI one at `/schema/asyncapi.json`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import swagger_ui
from litestar import get
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.static_files import create_static_files_router

ASSETS_PATH = "/schema/assets"
ASYNCAPI_PATH = "/schema/asyncapi.json"
_ASSETS_DIR = Path(swagger_ui.__file__).parent / "static"


def swagger_plugin() -> SwaggerRenderPlugin:
    return SwaggerRenderPlugin(
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
    )


docs_assets = create_static_files_router(
    path=ASSETS_PATH, directories=[_ASSETS_DIR], include_in_schema=False, name="docs_assets"
)


@cache
def _asyncapi_document() -> dict[str, Any]:
    from app.realtime.asyncapi import build_document

    return build_document()


@get(ASYNCAPI_PATH, include_in_schema=False, sync_to_thread=False)
def asyncapi_document() -> dict[str, Any]:
    """The `/api/ws` protocol (AsyncAPI 3), generated from the frame Structs."""
    return _asyncapi_document()
