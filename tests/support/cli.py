"""The `litestar` command line run in this process, through click's test runner.

Each call builds the app anew from the environment, as the console entry point does, so
the staff commands are tested without paying the app's import in a subprocess each time
(tests/test_cli.py runs the real entry point once). Litestar's root group loads the
plugins' commands once per process; advanced-alchemy's `database` group expects the app
loaded that way, so `database …` runs in the console test, and elsewhere `migrate`
(tests/support/databases.py) builds the schema.
"""

from __future__ import annotations

from collections.abc import Mapping

from click.testing import CliRunner, Result
from litestar.cli.main import litestar_group

from app.settings import get_settings


def litestar(database_url: str, *args: str, env: Mapping[str, str] | None = None) -> Result:
    """`litestar *args` on `database_url` with the runner off; `env`: more variables."""
    variables = {
        "LITESTAR_APP": "app:create_app",  # as discovery finds it from the project root
        "DATABASE_URL": database_url,
        "RUNNER_ENABLED": "0",
        **(env or {}),
    }
    get_settings.cache_clear()  # the app reads its settings from `variables`
    try:
        return CliRunner().invoke(litestar_group, args, env=variables)
    finally:
        get_settings.cache_clear()


def ok(result: Result) -> str:
    """The command's standard output, once it exited 0."""
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout
