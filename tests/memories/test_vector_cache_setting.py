"""The per-process vector cache is as large as `memory_vector_cache_mib` says, from the
start of the app that serves recall."""

from __future__ import annotations

from dataclasses import replace

from app import create_app
from app.memories import vector_cache
from app.settings import Settings
from tests.conftest import running_lifespan


async def test_the_app_sizes_the_vector_cache_from_its_setting(settings: Settings) -> None:
    app = create_app(replace(settings, memory_vector_cache_mib=3))
    before = vector_cache.cache
    async with running_lifespan(app):
        assert vector_cache.cache.max_bytes == 3 * 1024 * 1024
    assert vector_cache.cache is before  # the app's end gives the process's cache back
