"""The image's entrypoint (docker/entrypoint.sh), run here without Docker: against SQLite in
a temporary directory, with the project's virtualenv on PATH as the image has /opt/venv."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from app.cli.demo import DEMO_EMAIL, DEMO_PASSWORD, DEMO_TOKEN
from app.settings import PROJECT_ROOT

ENTRYPOINT = PROJECT_ROOT / "docker" / "entrypoint.sh"
COMMAND = [sys.executable, "-c", "print('serving')"]  # stands in for `litestar run`


def run_entrypoint(database: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        **env,
    }
    if "SEED_DEMO" not in env:
        environ.pop("SEED_DEMO", None)  # the caller's shell must not decide
    return subprocess.run(
        ["sh", str(ENTRYPOINT), *COMMAND],
        cwd=PROJECT_ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )


def users(database: Path) -> list[str]:
    with sqlite3.connect(database) as connection:
        return [email for (email,) in connection.execute("SELECT email FROM users")]


def test_migrates_seeds_the_demo_then_runs_the_command(tmp_path: Path) -> None:
    database = tmp_path / "app.sqlite3"
    first = run_entrypoint(database, SEED_DEMO="1")
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.strip().endswith("serving")
    assert users(database) == [DEMO_EMAIL]
    # A later start: nothing new, nothing lost.
    again = run_entrypoint(database, SEED_DEMO="1")
    assert again.returncode == 0, again.stderr[-2000:]
    assert users(database) == [DEMO_EMAIL]


def test_without_seed_demo_only_migrates(tmp_path: Path) -> None:
    database = tmp_path / "app.sqlite3"
    result = run_entrypoint(database)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("serving")
    assert users(database) == []  # the schema is there, no demo


def test_a_failed_migration_stops_the_start(tmp_path: Path) -> None:
    unreachable = tmp_path / "missing-directory" / "app.sqlite3"
    result = run_entrypoint(unreachable, SEED_DEMO="1")
    assert result.returncode != 0
    assert "serving" not in result.stdout


def test_the_image_uses_the_entrypoint() -> None:
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    assert "COPY docker/entrypoint.sh /usr/local/bin/toolcells-entrypoint" in dockerfile
    assert 'ENTRYPOINT ["toolcells-entrypoint"]' in dockerfile
    command = '"uvicorn", "app:create_app", "--factory", "--host", "0.0.0.0", "--port", "8000"'
    assert f'CMD [{command}, "--timeout-keep-alive", "75"]' in dockerfile
    assert ENTRYPOINT.stat().st_mode & stat.S_IXUSR  # COPY keeps the mode
    # the script is valid POSIX sh
    subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=True)


def test_compose_seeds_the_demo_only_when_asked_and_serves_this_machine_only() -> None:
    text = (PROJECT_ROOT / "docker-compose.yml").read_text()
    compose = yaml.safe_load(text)
    app = compose["services"]["app"]
    assert app["environment"]["SEED_DEMO"] == "${SEED_DEMO:-0}"
    assert "SEED_DEMO=1 docker compose up" in text  # how to ask for it
    # no credential in the file: the demo's are printed in the log when it is asked for
    for credential in (DEMO_PASSWORD, DEMO_TOKEN):
        assert credential not in text
    assert f"{DEMO_EMAIL} / {DEMO_PASSWORD}" in ENTRYPOINT.read_text()
    # published on the loopback interface unless BIND_ADDRESS says otherwise
    assert app["ports"] == ["${BIND_ADDRESS:-127.0.0.1}:8000:8000"]
    assert all(
        port.startswith("${BIND_ADDRESS:-127.0.0.1}:")
        for service in compose["services"].values()
        for port in service.get("ports", [])
    )
    # /metrics: a token to pass through (unset, the app answers only local scrapes)
    assert app["environment"]["METRICS_TOKEN"] == "${METRICS_TOKEN:-}"


def test_the_image_checks_liveness_after_a_cold_start_and_pins_uv() -> None:
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    (healthcheck,) = re.findall(r"^HEALTHCHECK (.*)$", dockerfile, re.MULTILINE)
    start_period = re.search(r"--start-period=(\d+)s", healthcheck)
    assert start_period is not None and int(start_period.group(1)) >= 60  # cold: 20-35 s
    assert "http://127.0.0.1:8000/api/health'" in dockerfile  # liveness, not readiness
    # uv at the version that wrote uv.lock, not whatever is newest at build time
    # (the lock's was 0.13.9; a newer uv on a laptop is fine, the image's must not drift)
    assert re.search(r"^ARG UV_VERSION=\d+\.\d+\.\d+$", dockerfile, re.MULTILINE)
    assert 'pip install --no-cache-dir "uv==${UV_VERSION}"' in dockerfile
    assert not re.search(r"pip install[^\n]* uv\s*$", dockerfile, re.MULTILINE)
