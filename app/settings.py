"""One frozen settings object, read from the environment once."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SQLITE_PATH = PROJECT_ROOT / "var" / "app.sqlite3"


def _env_list(name: str) -> tuple[str, ...]:
    raw = os.environ.get(name, "")
    return tuple(item.strip().lower() for item in raw.split(",") if item.strip())


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw else default


@dataclass(frozen=True)
class Settings:
    database_url: str = f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}"
    database_echo: bool = False
    llm_model: str = "demo/tool-demo"
    llm_api_base: str | None = None
    llm_api_key: str | None = None
    web_search_url: str | None = None
    web_fetch_allow_hosts: tuple[str, ...] = ()
    # Agent types and their toolsets (app/tools/agent_types.yaml when unset).
    agent_types_file: str | None = None
    redis_url: str | None = None
    token_ttl_days: int = 30
    max_request_body_bytes: int = 256 * 1024
    max_message_chars: int = 32_000
    max_page_size: int = 100
    default_page_size: int = 50
    ws_idle_timeout_seconds: float = 120.0
    run_lease_seconds: float = 30.0
    approval_ttl_seconds: float = 600.0
    runner_enabled: bool = True
    # Orchestrator: how often the runner polls (queue, leases, cancels) when not woken,
    # how many runs one process executes at once, and the model door's limits.
    runner_poll_seconds: float = 0.5
    runner_max_concurrent_runs: int = 16
    llm_timeout_seconds: float = 60.0
    llm_max_retries: int = 2
    llm_retry_base_seconds: float = 0.5
    llm_context_tokens: int = 32_000  # for models litellm does not know
    delegation_timeout_seconds: float = 120.0
    # Realtime (/api/ws): channel names are prefixed so deployments/tests sharing a Redis
    # stay apart; the limits protect one process from one client.
    channels_prefix: str = "tc:"
    ws_send_queue_size: int = 512
    ws_max_subscriptions: int = 100
    ws_max_frame_bytes: int = 4096
    ws_frame_rate: float = 20.0
    ws_frame_burst: int = 60
    # Runner liveness: each process renews a heartbeat row this often; a peer whose
    # heartbeat did not change for the timeout is taken for dead and its runs are failed
    # (the lease stays the backstop). A run's last write retries this long while the
    # database is unreachable.
    runner_heartbeat_seconds: float = 0.5
    runner_heartbeat_timeout_seconds: float = 3.0
    runner_db_retry_seconds: float = 60.0

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @classmethod
    def from_env(cls) -> Settings:
        defaults = cls()
        return cls(
            database_url=os.environ.get("DATABASE_URL") or defaults.database_url,
            database_echo=os.environ.get("DATABASE_ECHO", "") == "1",
            llm_model=os.environ.get("LLM_MODEL") or defaults.llm_model,
            llm_api_base=os.environ.get("LLM_API_BASE") or None,
            llm_api_key=os.environ.get("LLM_API_KEY") or None,
            web_search_url=os.environ.get("WEB_SEARCH_URL") or None,
            web_fetch_allow_hosts=_env_list("WEB_FETCH_ALLOW_HOSTS"),
            agent_types_file=os.environ.get("AGENT_TYPES_FILE") or None,
            redis_url=os.environ.get("REDIS_URL") or None,
            token_ttl_days=_env_int("TOKEN_TTL_DAYS", defaults.token_ttl_days),
            ws_idle_timeout_seconds=_env_float("WS_IDLE_TIMEOUT", defaults.ws_idle_timeout_seconds),
            run_lease_seconds=_env_float("RUN_LEASE_SECONDS", defaults.run_lease_seconds),
            runner_enabled=os.environ.get("RUNNER_ENABLED", "1") != "0",
            runner_poll_seconds=_env_float("RUNNER_POLL_SECONDS", defaults.runner_poll_seconds),
            approval_ttl_seconds=_env_float("APPROVAL_TTL_SECONDS", defaults.approval_ttl_seconds),
            llm_timeout_seconds=_env_float("LLM_TIMEOUT_SECONDS", defaults.llm_timeout_seconds),
            llm_max_retries=_env_int("LLM_MAX_RETRIES", defaults.llm_max_retries),
            llm_retry_base_seconds=_env_float(
                "LLM_RETRY_BASE_SECONDS", defaults.llm_retry_base_seconds
            ),
            channels_prefix=os.environ.get("CHANNELS_PREFIX") or defaults.channels_prefix,
            ws_send_queue_size=_env_int("WS_SEND_QUEUE_SIZE", defaults.ws_send_queue_size),
            ws_max_subscriptions=_env_int("WS_MAX_SUBSCRIPTIONS", defaults.ws_max_subscriptions),
            runner_max_concurrent_runs=_env_int(
                "RUNNER_MAX_CONCURRENT_RUNS", defaults.runner_max_concurrent_runs
            ),
            runner_heartbeat_seconds=_env_float(
                "RUNNER_HEARTBEAT_SECONDS", defaults.runner_heartbeat_seconds
            ),
            runner_heartbeat_timeout_seconds=_env_float(
                "RUNNER_HEARTBEAT_TIMEOUT_SECONDS", defaults.runner_heartbeat_timeout_seconds
            ),
            runner_db_retry_seconds=_env_float(
                "RUNNER_DB_RETRY_SECONDS", defaults.runner_db_retry_seconds
            ),
        )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()
