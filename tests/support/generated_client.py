"""A Python client generated from the committed OpenAPI file, and the app under uvicorn in
a subprocess for it to drive (tests/test_client_generation.py, tests/test_client_flows.py).

openapi-python-client turns openapi/openapi.json into a package in a temp directory; the
app runs on a free port, on the dialect's database.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from uuid import uuid4

import pytest

from app.openapi_export import OPENAPI_FILE
from app.settings import PROJECT_ROOT

STARTUP_TIMEOUT = 120  # seconds: a cold start runs every migration, slower on a busy machine
UVICORN = [sys.executable, "-m", "uvicorn", "app:create_app", "--factory"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The generated package's import name, for a test module's tests."""
    with generated_client(tmp_path_factory.mktemp("client")) as name:
        yield name


@contextmanager
def generated_client(root: Path) -> Iterator[str]:
    """The generated package's import name (importable while this is open)."""
    name = f"toolcells_client_{uuid4().hex[:8]}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(OPENAPI_FILE),
            "--output-path",
            str(root / name),
            "--meta",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    sys.path.insert(0, str(root))
    try:
        yield name
    finally:
        sys.path.remove(str(root))


def _wait_for_port(process: subprocess.Popen[str]) -> int:
    """Read uvicorn's log until it says where it listens (port 0 picks a free one)."""
    found: dict[str, int] = {}
    ready = threading.Event()
    lines: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            match = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", line)
            if match:
                found["port"] = int(match.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    ready.wait(STARTUP_TIMEOUT)
    assert "port" in found, "uvicorn did not start:\n" + "".join(lines)
    return found["port"]


@contextmanager
def served(database_url: str, **env: str) -> Iterator[str]:
    """The app under uvicorn on `database_url` (and `env`): its base URL."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **env,
    }
    process = subprocess.Popen(
        [*UVICORN, "--host", "127.0.0.1", "--port", "0", "--no-access-log"],
        cwd=PROJECT_ROOT,
        env=environment,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield f"http://127.0.0.1:{_wait_for_port(process)}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def module_of(package: str, path: str) -> ModuleType:
    return importlib.import_module(f"{package}.{path}")
