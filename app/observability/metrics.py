"""Every Prometheus metric of ours, and the one-line functions the code calls to move them.

The places that own an event call a function here (the runner's end through the change
sink in run_metrics.py, the tool executor, the realtime socket, subscription and sender,
the model door, the push sender); nothing else imports prometheus_client. HTTP request
metrics come from Litestar's Prometheus middleware (`toolcells_requests_total`, …), and
`/metrics` serves them all (app/observability/plugin.py).

Labels whose values come from outside (tool names a model made up, models an agent names)
are capped: after `MAX_LABEL_VALUES` distinct values, the rest count as "other".
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from app.lib import background

PREFIX = "toolcells"
MAX_LABEL_VALUES = 100
# Seconds: a turn with tool calls and a slow model can take minutes.
TURN_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
MODEL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120)

RUNS = Counter(f"{PREFIX}_runs", "Runs ended, by final status", ["status"])
TURN_SECONDS = Histogram(
    f"{PREFIX}_turn_seconds",
    "Seconds from a run's creation (the user's message) to its end, by final status",
    ["status"],
    buckets=TURN_BUCKETS,
)
TOOL_CALLS = Counter(
    f"{PREFIX}_tool_calls",
    "Tool calls ended, by tool and status (success, or the failure's error_type)",
    ["tool", "status"],
)
OPEN_SOCKETS = Gauge(f"{PREFIX}_open_sockets", "Authenticated /api/ws sockets open now")
SUBSCRIPTIONS = Gauge(f"{PREFIX}_subscriptions", "Thread subscriptions listening now")
FRAMES_SENT = Counter(f"{PREFIX}_frames_sent", "Frames written to /api/ws sockets")
BACKFILLS = Counter(
    f"{PREFIX}_pubsub_backfills",
    "Subscriptions that read missed changes from the database (gap: a lost or reordered "
    "event; reconnect: pub/sub was unreachable)",
    ["reason"],
)
MODEL_CALL_SECONDS = Histogram(
    f"{PREFIX}_model_call_seconds",
    "Seconds of one model call (one attempt, the whole stream), by model and outcome",
    ["model", "outcome"],
    buckets=MODEL_BUCKETS,
)
MODEL_ERRORS = Counter(
    f"{PREFIX}_model_errors", "Failed model calls (each attempt), by error kind", ["kind"]
)
MODEL_TOKENS = Counter(
    f"{PREFIX}_model_tokens",
    "Tokens of model calls as the providers reported them, by model, agent type and kind "
    "(input, output, cached: input read from the provider's cache, reasoning: part of output)",
    ["model", "agent_type", "kind"],
)
MODEL_COST = Counter(
    f"{PREFIX}_model_cost_usd",
    "Cost of model calls in USD (profile prices or litellm's model map), by model and agent type",
    ["model", "agent_type"],
)
PUSHES = Counter(
    f"{PREFIX}_push_notifications", "Push notifications attempted, by outcome", ["outcome"]
)
PUSH_EVENT_FAILURES = Counter(
    f"{PREFIX}_push_event_failures",
    "Push events whose fan-out failed, by what became of them (retry, dead_lettered)",
    ["outcome"],
)
REMINDERS = Counter(
    f"{PREFIX}_reminders",
    "Task reminders claimed when due, by what became of them (sent, dropped: too late)",
    ["outcome"],
)
FENCED = Counter(
    f"{PREFIX}_fenced",
    "Holders stopped because the database refused a write under a lease no longer theirs "
    "(app/threads/fence.py), by holder: run (a runner that lost a run's lease), push (a "
    "sender whose claim on a delivery lapsed: not sent, or its outcome not recorded)",
    ["holder"],
)
BACKGROUND_ERRORS = Counter(
    f"{PREFIX}_background_errors",
    "Failed runs of a background service's job (app/lib/background.py), by service: each "
    "is logged, and the service goes on",
    ["service"],
)

# Limits and how much of each is in use, read when /metrics is scraped (set_function):
# every pool and cap on a turn's path, sized for waiting runs (issue: many slow streams).
RUNNER_SLOTS_IN_USE = Gauge(
    f"{PREFIX}_runner_slots_in_use",
    "Runs executing in this process and holding a slot (those waiting for the user do not)",
)
RUNNER_SLOTS_LIMIT = Gauge(
    f"{PREFIX}_runner_slots_limit",
    "Runs this process executes at once (RUNNER_MAX_CONCURRENT_RUNS)",
)
RUNS_PARKED = Gauge(
    f"{PREFIX}_runs_parked", "Runs of this process waiting for the user or a device (no slot held)"
)
RUNS_WAITING = Gauge(
    f"{PREFIX}_runs_waiting", "Queued runs this process heard of and has not claimed"
)
DOOR_STREAMS = Gauge(
    f"{PREFIX}_model_door_streams",
    "Model calls in flight through the door's own client, by provider (each holds a "
    "connection, or waits for one beyond the limit)",
    ["provider"],
)
DOOR_CONNECTION_LIMIT = Gauge(
    f"{PREFIX}_model_door_connection_limit",
    "Connections the door's own client holds open to a provider at most "
    "(LLM_MAX_CONNECTIONS_PER_PROVIDER, a profile's max_connections)",
    ["provider"],
)
DB_POOL_CHECKED_OUT = Gauge(
    f"{PREFIX}_db_pool_checked_out",
    "Database connections in use, by pool (app: requests and sockets; runner: its own, "
    "on PostgreSQL)",
    ["pool"],
)
DB_POOL_SIZE = Gauge(
    f"{PREFIX}_db_pool_size", "Database connections a pool holds at most", ["pool"]
)
STREAM_DELTA_SECONDS = Gauge(
    f"{PREFIX}_stream_delta_seconds",
    "Seconds between two delta frames of a streaming reply now (widened under load)",
)
LOOP_LAG_SECONDS = Gauge(
    f"{PREFIX}_loop_lag_seconds",
    "How late the event loop wakes a timer (smoothed): the process's CPU is spoken for",
)
LOOP_LAG_LIMIT = Gauge(
    f"{PREFIX}_loop_lag_limit_seconds",
    "Loop lag from which new runs stay queued (RUNNER_BUSY_LAG_SECONDS; 0: never)",
)
WS_SEND_QUEUED = Gauge(f"{PREFIX}_ws_send_queued", "Frames queued to be sent, all sockets together")
WS_SEND_QUEUE_DEEPEST = Gauge(
    f"{PREFIX}_ws_send_queue_deepest", "Frames queued on the socket with the most waiting"
)
WS_SEND_QUEUE_LIMIT = Gauge(
    f"{PREFIX}_ws_send_queue_limit",
    "Frames a socket may have queued before it is closed as too slow (WS_SEND_QUEUE_SIZE)",
)

_seen: dict[str, set[str]] = {}


def bounded(label: str, value: str) -> str:
    """`value`, or "other" once `label` has `MAX_LABEL_VALUES` other values."""
    seen = _seen.setdefault(label, set())
    if value in seen:
        return value
    if len(seen) >= MAX_LABEL_VALUES:
        return "other"
    seen.add(value)
    return value


def run_ended(status: str, seconds: float | None) -> None:
    RUNS.labels(status).inc()
    if seconds is not None and seconds >= 0:
        TURN_SECONDS.labels(status).observe(seconds)


def tool_call(tool: str, status: str) -> None:
    TOOL_CALLS.labels(bounded("tool", tool), bounded("tool_status", status)).inc()


@contextmanager
def open_socket() -> Iterator[None]:
    OPEN_SOCKETS.inc()
    try:
        yield
    finally:
        OPEN_SOCKETS.dec()


def subscription_started() -> None:
    SUBSCRIPTIONS.inc()


def subscription_ended() -> None:
    SUBSCRIPTIONS.dec()


def frame_sent() -> None:
    FRAMES_SENT.inc()


def backfill(reason: str) -> None:
    BACKFILLS.labels(reason).inc()


@asynccontextmanager
async def model_call(model: str) -> AsyncIterator[None]:
    """Times one model call; `outcome` is ok, error or cancelled."""
    start, outcome = time.perf_counter(), "error"
    try:
        yield
        outcome = "ok"
    except BaseException as exc:
        if not isinstance(exc, Exception):
            outcome = "cancelled"
        raise
    finally:
        elapsed = time.perf_counter() - start
        MODEL_CALL_SECONDS.labels(bounded("model", model), outcome).observe(elapsed)


def model_error(kind: str) -> None:
    MODEL_ERRORS.labels(bounded("model_error", kind)).inc()


def model_usage(model: str, agent_type: str, usage: Any) -> None:
    """One model call's tokens and cost (`usage`: app/orchestrator/door/types.Usage)."""
    labels = (bounded("model", model), bounded("agent_type", agent_type or "none"))
    for kind in ("input", "output", "cached", "reasoning"):
        if count := getattr(usage, f"{kind}_tokens"):
            MODEL_TOKENS.labels(*labels, kind).inc(count)
    if usage.cost:
        MODEL_COST.labels(*labels).inc(usage.cost)


def record_push(outcome: str) -> None:
    """One push notification attempt: e.g. sent, failed, invalid_token, skipped."""
    PUSHES.labels(bounded("push_outcome", outcome)).inc()


def push_event_failed(outcome: str) -> None:
    """A push event's fan-out failed: `retry` (it goes again after a backoff) or
    `dead_lettered` (its attempts are spent; it is never tried again)."""
    PUSH_EVENT_FAILURES.labels(outcome).inc()


def reminders_fired(sent: int, dropped: int) -> None:
    """Due task reminders claimed: `sent` became pushes, `dropped` were past the lateness."""
    if sent:
        REMINDERS.labels("sent").inc(sent)
    if dropped:
        REMINDERS.labels("dropped").inc(dropped)


# -- limits and their use (read on scrape) ----------------------------------------------
def watch_runner(in_use: Callable[[], float], parked: Callable[[], float],
                 waiting: Callable[[], float], limit: int) -> None:  # fmt: skip
    """The run worker's slots (the last worker started in this process is the one read)."""
    RUNNER_SLOTS_IN_USE.set_function(in_use)
    RUNS_PARKED.set_function(parked)
    RUNS_WAITING.set_function(waiting)
    RUNNER_SLOTS_LIMIT.set(limit)


def watch_delta_window(window: Callable[[], float]) -> None:
    STREAM_DELTA_SECONDS.set_function(window)


def watch_loop_lag(lag: Callable[[], float], limit: float) -> None:
    LOOP_LAG_SECONDS.set_function(lag)
    LOOP_LAG_LIMIT.set(limit)


def door_connection_limit(provider: str, limit: int) -> None:
    DOOR_CONNECTION_LIMIT.labels(bounded("provider", provider)).set(limit)


def door_stream_started(provider: str) -> None:
    DOOR_STREAMS.labels(bounded("provider", provider)).inc()


def door_stream_ended(provider: str) -> None:
    DOOR_STREAMS.labels(bounded("provider", provider)).dec()


def watch_pool(name: str, checked_out: Callable[[], float], size: Callable[[], float]) -> None:
    DB_POOL_CHECKED_OUT.labels(name).set_function(checked_out)
    DB_POOL_SIZE.labels(name).set_function(size)


def watch_send_queues(
    queued: Callable[[], float], deepest: Callable[[], float], limit: int
) -> None:
    WS_SEND_QUEUED.set_function(queued)
    WS_SEND_QUEUE_DEEPEST.set_function(deepest)
    WS_SEND_QUEUE_LIMIT.set(limit)


def fenced(holder: str) -> None:
    """A holder (`run`, `push`) found its lease gone: refused, it stopped."""
    FENCED.labels(holder).inc()


def background_error(service: str) -> None:
    """A background service's job failed (logged there; the service goes on)."""
    BACKGROUND_ERRORS.labels(bounded("service", service)).inc()


background.failure_counters.add(background_error)
