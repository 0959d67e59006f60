"""One frozen settings object, read from the environment once.

Every field is set by one environment variable: the field name upper-cased, or the name in
its `Meta(extra={"env": ...})` where an older documented name differs (`WS_IDLE_TIMEOUT`).
msgspec converts the text of each variable to the field's annotated type, bounds included;
an empty variable means the default. Booleans accept 1/0/true/false/yes/no, lists are
comma-separated. A bad value raises `SettingsError`, one line naming the variable.
A frozen dataclass (msgspec converts to it like to a Struct), so `Settings(...)` keywords
and `dataclasses.replace` copies work as before.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from app.lib.client_address import Network, parse_networks

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SQLITE_PATH = PROJECT_ROOT / "var" / "app.sqlite3"

# Bounds msgspec checks when it converts an environment value.
PositiveInt = Annotated[int, Meta(ge=1)]
NonNegativeInt = Annotated[int, Meta(ge=0)]
PositiveFloat = Annotated[float, Meta(gt=0)]
NonNegativeFloat = Annotated[float, Meta(ge=0)]
ApnsEnvironment = Literal["sandbox", "production"]

_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"0", "false", "no"})


class StartupError(Exception):
    """A configuration problem that stops the server; its message alone (one line) tells
    the operator what to fix, so it is printed without a traceback."""


class SettingsError(StartupError, ValueError):
    """A bad environment value; the message is one line for whoever starts the server."""


@dataclass(frozen=True)
class Settings:
    # A field: `name: Annotated[type, Meta(description=...)] = default`, read from NAME; the
    # type's bounds are checked and the README table is generated from these. An
    # `extra={"env": ...}` only where an older documented name differs.
    database_url: Annotated[
        str, Meta(description="SQLAlchemy async URL; `postgresql+asyncpg://…` in production")
    ] = f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}"
    database_echo: Annotated[bool, Meta(description="log every SQL statement")] = False
    llm_model: Annotated[str, Meta(description="default model for agents without one")] = (
        "demo/tool-demo"
    )
    llm_api_base: Annotated[
        str | None, Meta(description="base URL of the default provider profile's models")
    ] = None
    llm_api_key: Annotated[
        str | None, Meta(description="API key of the default provider profile")
    ] = None
    llm_profiles_file: Annotated[
        str | None,
        Meta(
            description="YAML of named provider profiles (kind, base URL, key's variable, "
            "headers, timeout, prices); an agent's model `<profile>/<model>` picks one"
        ),
    ] = None
    llm_profiles: Annotated[
        str | None,
        Meta(description="provider profiles inline (the same YAML or JSON document)"),
    ] = None
    web_search_url: Annotated[
        str | None, Meta(description="SearXNG-compatible search endpoint for the `web` tool")
    ] = None
    web_fetch_allow_hosts: Annotated[
        tuple[str, ...],
        Meta(description="hosts `web.fetch` may reach although they resolve to private addresses"),
    ] = ()
    agent_types_file: Annotated[
        str | None,
        Meta(
            description="YAML of agent types and toolsets (`app/tools/agent_types.yaml` if unset)"
        ),
    ] = None
    redis_url: Annotated[
        str | None, Meta(description="pub/sub across several server processes")
    ] = None
    token_ttl_days: Annotated[PositiveInt, Meta(description="lifetime of issued API tokens")] = 30
    max_request_body_bytes: Annotated[
        PositiveInt, Meta(description="largest accepted request body")
    ] = 256 * 1024
    ws_idle_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="`/api/ws`: seconds without a client frame before closing (4408)",
            extra={"env": "WS_IDLE_TIMEOUT"},
        ),
    ] = 120.0
    run_lease_seconds: Annotated[
        PositiveFloat,
        Meta(description="lease of a running run, renewed by its worker; expired: interrupted"),
    ] = 30.0
    approval_ttl_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="how long a tool call waits in `awaiting_approval` (and a tool's "
            "question to the user in `awaiting_input`)"
        ),
    ] = 600.0
    runner_enabled: Annotated[
        bool, Meta(description="the embedded run worker (off: runs stay `queued`)")
    ] = True
    runner_poll_seconds: Annotated[
        PositiveFloat,
        Meta(description="the worker's poll of queue, leases, cancels when not woken"),
    ] = 0.5
    # A run waiting on a model, the user or a device holds no database connection (its
    # writes are short transactions) and costs only memory: sized for waiting, not for work.
    runner_max_concurrent_runs: Annotated[
        NonNegativeInt,
        Meta(
            description="runs one process executes at once (0: claims none); beyond it runs "
            "queue, fairly across users, and the phone is told its place (`run` frame `queued`)"
        ),
    ] = 1000
    # Slots size a process for waiting; a process short of CPU must not start more work
    # than it can stream: every run in it would slow down together (app/orchestrator/worker.py).
    runner_busy_lag_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="how late (smoothed) the event loop may wake before this process "
            "stops claiming new runs beyond RUNNER_BUSY_MIN_RUNS (half as late: it claims "
            "them that many at a time): they stay queued for a process with room, and the "
            "phone is told its place (0: never)"
        ),
    ] = 0.05
    runner_busy_min_runs: Annotated[
        NonNegativeInt,
        Meta(
            description="runs a process still claims while its event loop is late, and "
            "how many it claims at a time while half as late"
        ),
    ] = 16
    llm_timeout_seconds: Annotated[
        PositiveFloat, Meta(description="longest silence of a model stream")
    ] = 60.0
    llm_max_retries: Annotated[
        NonNegativeInt, Meta(description="retries of transient model errors (retry-after honoured)")
    ] = 2
    llm_retry_base_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="first backoff between model retries, doubled per attempt"),
    ] = 0.5
    llm_fast_stream: Annotated[
        bool,
        Meta(
            description="OpenAI-format providers through the door's own client (false: "
            "all through litellm)"
        ),
    ] = True
    llm_max_connections_per_provider: Annotated[
        PositiveInt,
        Meta(
            description="connections the model door holds open to one provider (a streaming "
            "run holds one; a profile's `max_connections` overrides it)"
        ),
    ] = 1000
    stream_delta_seconds: Annotated[
        PositiveFloat,
        Meta(description="least time between two `delta` frames of a streaming reply"),
    ] = 0.05
    stream_delta_max_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="the same, widened up to this while the event loop lags (load): "
            "fewer frames, smoothly later text"
        ),
    ] = 0.15
    llm_context_tokens: Annotated[
        PositiveInt, Meta(description="context window assumed for models litellm does not know")
    ] = 32_000
    delegation_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(description="longest wait for a delegated specialist (capped by its run timeout)"),
    ] = 120.0
    delegation_max_depth: Annotated[
        PositiveInt,
        Meta(
            description="levels of delegation a run may chain (1: only the run's agent asks specialists)"
        ),
    ] = 2
    tool_output_max_chars: Annotated[
        PositiveInt,
        Meta(description="characters of a tool's streamed output kept in its cell (`data.output`)"),
    ] = 20_000
    tool_flush_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="least time between writes of a running tool's output and progress"),
    ] = 0.25
    user_monthly_token_budget: Annotated[
        NonNegativeInt,
        Meta(
            description="model tokens (input + output) a user's runs may spend per UTC month; "
            "then new messages get 429 until the month ends (0: no budget)"
        ),
    ] = 0
    user_monthly_cost_budget_usd: Annotated[
        NonNegativeFloat,
        Meta(description="the same budget in USD of model cost (0: no budget)"),
    ] = 0.0
    completion_wait_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="`POST /v1/chat/completions`: longest wait for a run's answer "
            "(then a `timeout` error; the run continues)"
        ),
    ] = 300.0
    channels_prefix: Annotated[
        str,
        Meta(description="prefix of pub/sub channels, to keep deployments sharing a Redis apart"),
    ] = "tc:"
    ws_send_queue_size: Annotated[
        PositiveInt,
        Meta(
            description="`/api/ws`: frames queued per socket before a slow client is closed (4429)"
        ),
    ] = 512
    ws_max_subscriptions: Annotated[
        PositiveInt, Meta(description="`/api/ws`: thread subscriptions per socket")
    ] = 100
    ws_max_frame_bytes: Annotated[
        PositiveInt, Meta(description="`/api/ws`: largest client frame (larger: a `limit` error)")
    ] = 4096
    ws_frame_rate: Annotated[
        PositiveFloat, Meta(description="`/api/ws`: client frames per second, sustained")
    ] = 20.0
    ws_frame_burst: Annotated[
        PositiveInt, Meta(description="`/api/ws`: client frames allowed in a burst")
    ] = 60
    # The app's and the runner's pools together (app/db/config.py splits it).
    database_max_connections: Annotated[
        PositiveInt,
        Meta(description="database connections this process may hold at once (app + runner)"),
    ] = 20
    database_pool_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="longest wait for a free database connection before answering 503",
            extra={"env": "DATABASE_POOL_TIMEOUT"},
        ),
    ] = 30.0
    database_statement_timeout_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="PostgreSQL: longest wait for one statement's answer; past it the "
            "statement fails as the database being unavailable (503) and its connection "
            "is dropped, so a host cut off without a reset does not wait on a dead socket "
            "(0: no limit; migrations have none)",
            extra={"env": "DATABASE_STATEMENT_TIMEOUT"},
        ),
    ] = 30.0
    ws_token_check_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="`/api/ws`: how often each process checks its sockets' tokens "
            "(revoked or expired: closed with 4401)"
        ),
    ] = 5.0
    # Login throttling (app/accounts/throttle.py): failed logins in one window before a 429.
    login_max_failures_per_account: Annotated[
        PositiveInt, Meta(description="failed logins of one account per window before a 429")
    ] = 10
    login_max_failures_per_address: Annotated[
        PositiveInt, Meta(description="failed logins from one client address per window")
    ] = 50
    login_failure_window_seconds: Annotated[
        PositiveFloat, Meta(description="the login throttling window")
    ] = 900.0
    trusted_proxies: Annotated[
        tuple[str, ...],
        Meta(
            description="addresses or CIDR ranges of reverse proxies whose `X-Forwarded-For` "
            "names the client (login throttling per address); from any other peer it is ignored"
        ),
    ] = ()
    # Runner liveness: a peer whose heartbeat did not change for the timeout is taken for
    # dead and its runs are failed (the lease stays the backstop).
    runner_heartbeat_seconds: Annotated[
        PositiveFloat, Meta(description="how often each process renews its heartbeat row")
    ] = 0.5
    runner_heartbeat_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(description="a peer whose heartbeat is this old is dead: its runs are failed"),
    ] = 3.0
    runner_db_retry_seconds: Annotated[
        PositiveFloat,
        Meta(description="how long a run's last write retries while the database is unreachable"),
    ] = 60.0
    auth_cache_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="how long a process reuses a bearer token's lookup (0: off); "
            "a revocation through the API applies at once, one made in the database within this"
        ),
    ] = 5.0
    # -- push notifications (APNs); push is off unless the key, key id, team and topic are set
    apns_key_file: Annotated[
        str | None, Meta(description="APNs auth key (`.p8`, ES256) file; unset: push is off")
    ] = None
    apns_key_id: Annotated[str | None, Meta(description="the APNs auth key's id (JWT `kid`)")] = (
        None
    )
    apns_team_id: Annotated[str | None, Meta(description="Apple developer team id (JWT `iss`)")] = (
        None
    )
    apns_topic: Annotated[
        str | None,
        Meta(description="the app's bundle id: topic of test pushes and Live Activities"),
    ] = None
    apns_environment: Annotated[
        ApnsEnvironment,
        Meta(description="APNs environment of Live Activity tokens (devices say their own)"),
    ] = "production"
    apns_base_url: Annotated[
        str | None,
        Meta(description="send every push to this URL, whatever its environment (tests)"),
    ] = None
    apns_sandbox_base_url: Annotated[
        str, Meta(description="APNs endpoint of sandbox tokens (debug builds)")
    ] = "https://api.sandbox.push.apple.com"
    apns_production_base_url: Annotated[
        str, Meta(description="APNs endpoint of production tokens")
    ] = "https://api.push.apple.com"
    apns_ca_file: Annotated[
        str | None, Meta(description="CA bundle that verifies the APNs server (tests)")
    ] = None
    push_retry_base_seconds: Annotated[
        PositiveFloat,
        Meta(description="first backoff of a push answered 429/5xx, doubled each time"),
    ] = 2.0
    push_max_attempts: Annotated[
        PositiveInt, Meta(description="attempts of one push before it is given up")
    ] = 8
    push_poll_seconds: Annotated[
        PositiveFloat, Meta(description="the push sender's poll of its outbox when not woken")
    ] = 5.0
    presence_ttl_seconds: Annotated[
        PositiveFloat,
        Meta(description="a process's record of its sockets' threads lives this long unrenewed"),
    ] = 30.0
    live_activity_update_seconds: Annotated[
        PositiveFloat, Meta(description="at most one Live Activity update per this many seconds")
    ] = 5.0
    live_activity_dismiss_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="an ended Live Activity stays on the lock screen this long"),
    ] = 900.0

    def __post_init__(self) -> None:
        try:
            parse_networks(self.trusted_proxies)
        except ValueError as error:
            raise SettingsError(f"Invalid setting TRUSTED_PROXIES: {error}") from None

    @property
    def trusted_networks(self) -> tuple[Network, ...]:
        return parse_networks(self.trusted_proxies)

    @property
    def push_enabled(self) -> bool:
        """APNs is configured: key file, key id, team id and topic are all set."""
        return all((self.apns_key_file, self.apns_key_id, self.apns_team_id, self.apns_topic))

    # Operating in production (app/observability/): logs, metrics, traces.
    log_format: Annotated[
        Literal["text", "json"],
        Meta(description="log lines as text, or one JSON object per line (with `request_id`)"),
    ] = "text"
    log_level: Annotated[
        Literal["debug", "info", "warning", "error"],
        Meta(description="lowest level logged (tool events are `debug`)"),
    ] = "info"
    access_log: Annotated[
        bool,
        Meta(
            description="one INFO line per HTTP request (uvicorn's access log, with the "
            "request id); off saves its CPU (README, benchmark)"
        ),
    ] = True
    gc_freeze_after_startup: Annotated[
        bool,
        Meta(
            description="keep what startup made (~190,000 objects that live as long as the "
            "process) out of the garbage collector's full collections, each of which "
            "otherwise paused every request for 50-100 ms"
        ),
    ] = True
    metrics_enabled: Annotated[bool, Meta(description="serve Prometheus metrics at `/metrics`")] = (
        True
    )
    metrics_token: Annotated[
        str | None,
        Meta(description="when set, `/metrics` requires `Authorization: Bearer <token>`"),
    ] = None
    mcp_demo_server: Annotated[
        bool,
        Meta(
            description="start the bundled demo MCP server (a free local port) for agent "
            "types that list a `bundled: true` server"
        ),
    ] = True
    mcp_token_key: Annotated[
        str | None,
        Meta(
            description="Fernet key (`Fernet.generate_key()`) encrypting users' MCP server "
            "tokens; unset: per-user MCP servers are off"
        ),
    ] = None
    mcp_oauth_allow_hosts: Annotated[
        tuple[str, ...],
        Meta(
            description="hosts MCP OAuth discovery and token requests may reach although they "
            "resolve to private addresses (every other host must be public)"
        ),
    ] = ()
    mcp_oauth_redirect_url: Annotated[
        str | None,
        Meta(
            description="the public URL of `GET /api/mcp/oauth/callback` given to authorization "
            "servers; unset: derived from the request that starts the flow"
        ),
    ] = None
    mcp_oauth_return_url: Annotated[
        str | None,
        Meta(
            description="where the OAuth callback sends the browser when done (the app's "
            "callback URL, e.g. `toolcells://mcp-oauth`; `?server=…&status=…` appended); "
            "unset: a short page"
        ),
    ] = None
    otel_enabled: Annotated[
        bool,
        Meta(
            description="OpenTelemetry traces (requests, model and tool calls), exported over "
            "OTLP as the standard `OTEL_EXPORTER_OTLP_*` variables say (needs the `otel` extra)"
        ),
    ] = False

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment gives; all bad variables reported in one line."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        errors: list[str] = []
        for variable in variables():
            raw = environ.get(variable.name, "")
            if raw == "":  # empty means unset, e.g. a compose file's `LLM_API_KEY=`
                continue
            try:
                values[variable.field] = variable.parse(raw)
            except msgspec.ValidationError:
                errors.append(f"{variable.name}={raw!r}: expected {variable.expected()}")
        if errors:
            raise SettingsError("Invalid setting " + "; ".join(errors))
        return cls(**values)


@dataclass(frozen=True)
class Variable:
    """One environment variable: the Settings field it sets and what it accepts."""

    name: str
    field: str
    annotation: Any  # the field's type with its bounds, for msgspec
    kind: msgspec.inspect.Type  # the same without metadata and `| None`
    description: str
    default: Any

    def parse(self, raw: str) -> Any:
        value: Any = raw
        if isinstance(self.kind, msgspec.inspect.BoolType):
            word = raw.strip().lower()
            value = True if word in _TRUE else False if word in _FALSE else raw
        elif isinstance(self.kind, _LIST_TYPES):
            value = [item.strip() for item in raw.split(",") if item.strip()]
        elif isinstance(self.kind, msgspec.inspect.LiteralType):
            value = raw.strip().lower()  # LOG_LEVEL=INFO as well as info
        return msgspec.convert(value, self.annotation, strict=False)

    def expected(self) -> str:
        """What the variable accepts, in words (error messages, README)."""
        kind = self.kind
        if isinstance(kind, msgspec.inspect.BoolType):
            return "one of 1, 0, true, false, yes, no"
        if isinstance(kind, _LIST_TYPES):
            return "a comma-separated list"
        if isinstance(kind, msgspec.inspect.LiteralType):
            return "one of " + ", ".join(map(str, kind.values))
        if isinstance(kind, msgspec.inspect.IntType | msgspec.inspect.FloatType):
            number = "an integer" if isinstance(kind, msgspec.inspect.IntType) else "a number"
            bounds = [
                f"{op} {bound}"
                for op, bound in ((">", kind.gt), (">=", kind.ge), ("<", kind.lt), ("<=", kind.le))
                if bound is not None
            ]
            return " ".join([number, " and ".join(bounds)]).strip()
        if isinstance(kind, msgspec.inspect.StrType):
            return "text"
        if isinstance(kind, msgspec.inspect.LiteralType):
            return "one of " + ", ".join(sorted(str(value) for value in kind.values))
        return str(self.annotation)


_LIST_TYPES = (msgspec.inspect.VarTupleType, msgspec.inspect.ListType)


@lru_cache(maxsize=1)
def variables() -> tuple[Variable, ...]:
    """Every Settings field as its environment variable, in declaration order."""
    hints = typing.get_type_hints(Settings, include_extras=True)  # annotations are strings
    return tuple(_variable(field, hints[field.name]) for field in dataclasses.fields(Settings))


def _variable(field: dataclasses.Field[Any], annotation: Any) -> Variable:
    kind = msgspec.inspect.type_info(annotation)
    description, env = "", None
    if isinstance(kind, msgspec.inspect.Metadata):
        description = (kind.extra_json_schema or {}).get("description", "")
        env = (kind.extra or {}).get("env")
        kind = kind.type
    if isinstance(kind, msgspec.inspect.UnionType):  # `X | None`: the variable sets an X
        kind = next(t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType))
    return Variable(
        name=env or field.name.upper(),
        field=field.name,
        annotation=annotation,
        kind=kind,
        description=description,
        default=field.default,
    )


def _one_line_settings_errors(hook: Callable[..., Any]) -> Callable[..., Any]:
    """`litestar run` builds the app while it parses its command line, outside any handler of
    ours, so a bad setting (or agent types file) reaches the interpreter uncaught: print its
    message alone (the exit code stays 1) instead of a traceback that buries it."""

    def excepthook(
        exc_type: type[BaseException], exc: BaseException, tb: types.TracebackType | None
    ) -> None:
        if isinstance(exc, StartupError):
            print(exc, file=sys.stderr)
        else:
            hook(exc_type, exc, tb)

    return excepthook


sys.excepthook = _one_line_settings_errors(sys.excepthook)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings.from_env()
