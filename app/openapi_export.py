"""Write the OpenAPI document the app serves to openapi/openapi.json.

`uv run python -m app.openapi_export` regenerates it; `--check` exits 1 when the committed
file differs from what the app generates (tests/test_openapi.py does the same).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from app.settings import PROJECT_ROOT, Settings

OPENAPI_FILE = PROJECT_ROOT / "openapi" / "openapi.json"


def generate_openapi() -> dict[str, Any]:
    """The document as served at /schema/openapi.json (no database is touched)."""
    from app.asgi import create_app

    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", runner_enabled=False))
    return app.openapi_schema.to_schema()


def render(document: dict[str, Any]) -> str:
    # Sorted keys and a trailing newline keep diffs of the committed file minimal.
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    target = Path(OPENAPI_FILE)
    document = generate_openapi()
    if "--check" in argv:
        committed = json.loads(target.read_text()) if target.exists() else None
        if committed != document:
            print(f"{target} is stale: run `uv run python -m app.openapi_export`", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(exist_ok=True)
    target.write_text(render(document))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
