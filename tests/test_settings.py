"""Settings from the environment: every field by one name, clear errors, true docs."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from app import create_app
from app.settings import (
    DEFAULT_SQLITE_PATH,
    PROJECT_ROOT,
    Settings,
    SettingsError,
    Variable,
    get_settings,
    variables,
)
from app.settings_docs import CONFIGURATION_DOC, with_table

# The names operators already use; they must keep working.
DOCUMENTED_NAMES = {
    "database_pool_timeout_seconds": "DATABASE_POOL_TIMEOUT",
    "database_statement_timeout_seconds": "DATABASE_STATEMENT_TIMEOUT",
    "database_url": "DATABASE_URL",
    "database_echo": "DATABASE_ECHO",
    "llm_model": "LLM_MODEL",
    "llm_api_base": "LLM_API_BASE",
    "llm_api_key": "LLM_API_KEY",
    "web_search_url": "WEB_SEARCH_URL",
    "web_fetch_allow_hosts": "WEB_FETCH_ALLOW_HOSTS",
    "agent_types_file": "AGENT_TYPES_FILE",
    "redis_url": "REDIS_URL",
    "token_ttl_days": "TOKEN_TTL_DAYS",
    "ws_idle_timeout_seconds": "WS_IDLE_TIMEOUT",
    "run_lease_seconds": "RUN_LEASE_SECONDS",
    "runner_enabled": "RUNNER_ENABLED",
    "runner_poll_seconds": "RUNNER_POLL_SECONDS",
    "approval_ttl_seconds": "APPROVAL_TTL_SECONDS",
    "llm_timeout_seconds": "LLM_TIMEOUT_SECONDS",
    "llm_max_retries": "LLM_MAX_RETRIES",
    "llm_retry_base_seconds": "LLM_RETRY_BASE_SECONDS",
    "channels_prefix": "CHANNELS_PREFIX",
    "ws_send_queue_size": "WS_SEND_QUEUE_SIZE",
    "ws_max_subscriptions": "WS_MAX_SUBSCRIPTIONS",
}

DEFAULTS = {
    "database_url": f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}",
    "database_echo": False,
    "llm_model": "demo/tool-demo",
    "llm_api_base": None,
    "llm_api_key": None,
    "llm_profiles_file": None,
    "llm_profiles": None,
    "user_monthly_token_budget": 0,
    "user_monthly_cost_budget_usd": 0.0,
    "web_search_url": None,
    "web_fetch_allow_hosts": (),
    "agent_types_file": None,
    "redis_url": None,
    "token_ttl_days": 30,
    "max_request_body_bytes": 256 * 1024,
    "memory_embeddings": "embedded",
    "memory_vectors_retry_seconds": 30.0,
    "memory_vector_cache_mib": 256,
    "ws_idle_timeout_seconds": 120.0,
    "run_lease_seconds": 30.0,
    "approval_ttl_seconds": 600.0,
    "runner_enabled": True,
    "runner_poll_seconds": 0.5,
    "runner_max_concurrent_runs": 1000,
    "runner_busy_lag_seconds": 0.05,
    "runner_busy_min_runs": 16,
    "llm_timeout_seconds": 60.0,
    "llm_max_retries": 2,
    "llm_retry_base_seconds": 0.5,
    "llm_fast_stream": True,
    "llm_max_connections_per_provider": 1000,
    "stream_delta_seconds": 0.05,
    "stream_delta_max_seconds": 0.15,
    "llm_context_tokens": 32_000,
    "delegation_timeout_seconds": 120.0,
    "delegation_max_depth": 2,
    "tool_output_max_chars": 20_000,
    "tool_result_max_bytes": 65_536,
    "tool_flush_seconds": 0.25,
    "completion_wait_seconds": 300.0,
    "channels_prefix": "tc:",
    "ws_send_queue_size": 512,
    "ws_max_subscriptions": 100,
    "ws_max_frame_bytes": 4096,
    "ws_frame_rate": 20.0,
    "ws_frame_burst": 60,
    "database_max_connections": 20,
    "database_pool_timeout_seconds": 30.0,
    "database_statement_timeout_seconds": 30.0,
    "database_idle_in_transaction_timeout_seconds": 15.0,
    "ws_token_check_seconds": 5.0,
    "auth_cache_seconds": 5.0,
    "login_max_failures_per_account": 10,
    "login_max_failures_per_address": 50,
    "login_failure_window_seconds": 900.0,
    "trusted_proxies": (),
    "runner_heartbeat_seconds": 0.5,
    "runner_heartbeat_timeout_seconds": 10.0,
    "runner_db_retry_seconds": 60.0,
    "apns_key_file": None,
    "apns_key_id": None,
    "apns_team_id": None,
    "apns_topic": None,
    "apns_environment": "production",
    "apns_base_url": None,
    "apns_sandbox_base_url": "https://api.sandbox.push.apple.com",
    "apns_production_base_url": "https://api.push.apple.com",
    "apns_ca_file": None,
    "push_retry_base_seconds": 2.0,
    "push_max_attempts": 8,
    "push_poll_seconds": 5.0,
    "presence_ttl_seconds": 30.0,
    "live_activity_update_seconds": 5.0,
    "live_activity_dismiss_seconds": 900.0,
    "reminder_max_lateness_seconds": 21600.0,
    "reminder_late_after_seconds": 60.0,
    "reminder_poll_seconds": 60.0,
    "schedules_per_user": 20,
    "schedule_min_interval_seconds": 900.0,
    "schedule_max_failures": 3,
    "schedule_runs_per_day": 48,
    "log_format": "text",
    "log_level": "info",
    "access_log": True,
    "gc_freeze_after_startup": True,
    "attachments_dir": "var/attachments",
    "attachments_storage": "local",
    "s3_endpoint": None,
    "s3_bucket": "",
    "s3_region": "us-east-1",
    "s3_access_key_id": None,
    "s3_secret_access_key": None,
    "s3_presign_seconds": 300,
    "attachment_image_max_bytes": 20 * 1024 * 1024,
    "attachment_image_max_pixels": 50_000_000,
    "attachment_pdf_max_bytes": 20 * 1024 * 1024,
    "attachment_text_max_bytes": 1024 * 1024,
    "attachment_text_max_chars": 20_000,
    "attachment_processing_workers": 1,
    "user_attachment_quota_bytes": 1024 * 1024 * 1024,
    "attachment_unreferenced_hours": 24,
    "llm_vision_models": (),
    "metrics_enabled": True,
    "metrics_token": None,
    "mcp_demo_server": True,
    "mcp_token_key": None,
    "mcp_oauth_allow_hosts": (),
    "mcp_oauth_redirect_url": None,
    "mcp_oauth_return_url": None,
    "otel_enabled": False,
}


def other_value(variable: Variable) -> tuple[str, object]:
    """A valid environment value differing from the default, and the value it should give."""
    kind, default = variable.kind, variable.default
    if isinstance(kind, msgspec.inspect.BoolType):
        return ("no", False) if default else ("yes", True)
    if variable.name == "TRUSTED_PROXIES":  # addresses and ranges only
        return " 10.0.0.0/8 , ::1,", ("10.0.0.0/8", "::1")
    if isinstance(kind, msgspec.inspect.VarTupleType):
        return " a.example , b.example,", ("a.example", "b.example")
    if isinstance(kind, msgspec.inspect.IntType):
        return str(default + 1), default + 1
    if isinstance(kind, msgspec.inspect.FloatType):
        return str(default + 1.5), default + 1.5
    if isinstance(kind, msgspec.inspect.LiteralType):
        other = next(v for v in kind.values if v != default)
        return other.upper(), other  # case does not matter
    if isinstance(kind, msgspec.inspect.StrType):
        return f"set-{variable.name.lower()}", f"set-{variable.name.lower()}"
    if isinstance(kind, msgspec.inspect.LiteralType):
        other = next(v for v in sorted(kind.values) if v != default)
        return str(other), other
    pytest.fail(f"{variable.name}: teach other_value() a {kind!r}")


@pytest.mark.parametrize("field", dataclasses.fields(Settings), ids=lambda f: f.name)
def test_every_field_is_set_by_its_environment_variable(field: dataclasses.Field) -> None:
    variable = next(v for v in variables() if v.field == field.name)
    raw, value = other_value(variable)
    settings = Settings.from_env({variable.name: raw})
    assert getattr(settings, field.name) == value != field.default
    # Only that field changed.
    assert dataclasses.replace(settings, **{field.name: field.default}) == Settings()


def test_environment_names_are_unique_and_keep_the_documented_ones() -> None:
    names = {v.field: v.name for v in variables()}
    assert len(set(names.values())) == len(names) == len(dataclasses.fields(Settings))
    assert names.items() >= DOCUMENTED_NAMES.items()
    # New names follow the rule: the field name upper-cased.
    assert all(names[f] == f.upper() for f in names if f not in DOCUMENTED_NAMES)


def test_defaults_are_unchanged() -> None:
    assert dataclasses.asdict(Settings.from_env({})) == dataclasses.asdict(Settings()) == DEFAULTS


def test_an_empty_variable_means_the_default() -> None:
    env = {"DATABASE_URL": "", "LLM_API_BASE": "", "WS_IDLE_TIMEOUT": "", "RUNNER_ENABLED": ""}
    assert Settings.from_env(env) == Settings()


@pytest.mark.parametrize(
    ("raw", "value"),
    [("1", True), ("true", True), ("Yes", True), ("0", False), ("FALSE", False), ("no", False)],
)
def test_booleans(raw: str, value: bool) -> None:
    assert Settings.from_env({"RUNNER_ENABLED": raw}).runner_enabled is value
    assert Settings.from_env({"DATABASE_ECHO": raw}).database_echo is value


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("WS_IDLE_TIMEOUT", "abc", "Invalid setting WS_IDLE_TIMEOUT='abc': expected a number > 0"),
        ("WS_IDLE_TIMEOUT", "0", "Invalid setting WS_IDLE_TIMEOUT='0': expected a number > 0"),
        (
            "RUNNER_ENABLED",
            "off",
            "Invalid setting RUNNER_ENABLED='off': expected one of 1, 0, true, false, yes, no",
        ),
        (
            "MAX_REQUEST_BODY_BYTES",
            "1.5",
            "Invalid setting MAX_REQUEST_BODY_BYTES='1.5': expected an integer >= 1",
        ),
        (
            "LLM_MAX_RETRIES",
            "-1",
            "Invalid setting LLM_MAX_RETRIES='-1': expected an integer >= 0",
        ),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_what_is_expected(
    name: str, raw: str, message: str
) -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({name: raw})
    assert str(error.value) == message


def test_all_bad_values_are_reported_in_one_line() -> None:
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"TOKEN_TTL_DAYS": "soon", "WS_FRAME_RATE": "-2"})
    assert str(error.value) == (
        "Invalid setting TOKEN_TTL_DAYS='soon': expected an integer >= 1; "
        "WS_FRAME_RATE='-2': expected a number > 0"
    )


@pytest.fixture
def fresh_settings() -> Iterator[None]:
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_create_app_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, fresh_settings: None
) -> None:
    monkeypatch.setenv("RUNNER_ENABLED", "no")
    monkeypatch.setenv("WS_IDLE_TIMEOUT", "abc")
    with pytest.raises(SettingsError, match="WS_IDLE_TIMEOUT='abc'"):
        create_app()
    monkeypatch.setenv("WS_IDLE_TIMEOUT", "7.5")
    monkeypatch.setenv("MAX_REQUEST_BODY_BYTES", "1000")
    app = create_app()
    assert app.state.settings.ws_idle_timeout_seconds == 7.5
    assert app.request_max_body_size == 1000


def test_litestar_run_reports_a_bad_setting_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "litestar", "run", "--port", "0"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "WS_IDLE_TIMEOUT": "abc"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Invalid setting WS_IDLE_TIMEOUT='abc': expected a number > 0"
    ]
    assert result.stdout == ""


def test_litestar_run_reports_a_missing_agent_types_file_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "agent_types.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "litestar", "run", "--port", "0"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "AGENT_TYPES_FILE": str(missing)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Cannot read agent types file {missing}: No such file or directory"
    ]


def test_the_configuration_doc_lists_every_setting() -> None:
    doc = CONFIGURATION_DOC.read_text()
    assert with_table(doc) == doc, "stale: run `uv run python -m app.settings_docs`"
    for variable in variables():
        assert variable.description, f"{variable.field}: give it a Meta(description=...)"
        assert f"| `{variable.name}` |" in doc


def test_a_trusted_proxy_that_is_no_address_stops_the_start_in_one_line() -> None:
    with pytest.raises(SettingsError, match=r"TRUSTED_PROXIES: 'proxy\.internal' is not an IP"):
        Settings.from_env({"TRUSTED_PROXIES": "10.0.0.1,proxy.internal"})


def test_credentials_never_show_in_the_settings_repr() -> None:
    settings = Settings(
        llm_api_key="sk-live-1", mcp_token_key="fernet-2", s3_access_key_id="AKIA3",
        s3_secret_access_key="secret-4", s3_bucket="photos",
    )  # fmt: skip
    shown = repr(settings)
    assert not any(value in shown for value in ("sk-live-1", "fernet-2", "AKIA3", "secret-4"))
    assert "s3_bucket='photos'" in shown and "llm_api_key='***'" in shown
    assert "s3_access_key_id=None" in repr(Settings())
