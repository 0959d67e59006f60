"""Write the OpenAPI document the app serves to openapi/openapi.json, and beside it
openapi-generator's configuration for it (openapi/openapi-generator.json: its fallback
cases, and the open sets read as the closed ones they wrap, app/lib/open_schemas.py).

`uv run python -m app.openapi_export` regenerates both; `--check` exits 1 when a committed
file differs from what the app generates (tests/test_openapi.py does the same).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from app.lib.open_schemas import generator_config
from app.settings import PROJECT_ROOT, Settings

OPENAPI_FILE = PROJECT_ROOT / "openapi" / "openapi.json"
GENERATOR_CONFIG_FILE = PROJECT_ROOT / "openapi" / "openapi-generator.json"


def generate_openapi() -> dict[str, Any]:
    """The document as served at /schema/openapi.json (no database is touched)."""
    from app.asgi import create_app

    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", runner_enabled=False))
    return app.openapi_schema.to_schema()


def render(document: dict[str, Any]) -> str:
    # Sorted keys and a trailing newline keep diffs of the committed file minimal.
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generated_files() -> dict[Path, dict[str, Any]]:
    document = generate_openapi()
    config = generator_config(document["components"]["schemas"])
    return {Path(OPENAPI_FILE): document, Path(GENERATOR_CONFIG_FILE): config}


def main(argv: list[str]) -> int:
    files = generated_files()
    if "--check" in argv:
        for target, content in files.items():
            committed = json.loads(target.read_text()) if target.exists() else None
            if committed != content:
                print(
                    f"{target} is stale: run `uv run python -m app.openapi_export`", file=sys.stderr
                )
                return 1
        return 0
    for target, content in files.items():
        target.parent.mkdir(exist_ok=True)
        target.write_text(render(content))
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
