"""The test suite's own first-run experience: no PostgreSQL gives one clear line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from app.settings import PROJECT_ROOT


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the socket closes


def test_missing_postgres_is_one_line_naming_the_sqlite_only_command() -> None:
    env = {
        **os.environ,
        "TEST_DIALECTS": "sqlite,postgresql",
        "TEST_POSTGRES_DSN": f"postgresql://postgres@127.0.0.1:{_closed_port()}/test",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/api/test_threads.py",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4
    assert "PostgreSQL is not reachable" in done.stdout + done.stderr
    assert "TEST_DIALECTS=sqlite uv run pytest" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
