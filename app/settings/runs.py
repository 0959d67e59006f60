"""Settings of runs: the embedded run worker (claims, leases, heartbeats, the busy-loop
gate), then the turn itself (waits for the user, streaming, delegation, the OpenAI-style
completion's wait)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt


@dataclass(frozen=True)
class RunSettings:
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
    # than it can stream: every run in it would slow down together (app/orchestrator/scheduling/claims.py).
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
    run_lease_seconds: Annotated[
        PositiveFloat,
        Meta(description="lease of a running run, renewed by its worker; expired: interrupted"),
    ] = 30.0
    # Runner liveness: a peer whose heartbeat did not change for the timeout is taken for
    # dead and its runs are failed (the lease stays the backstop). The timeout is a margin
    # over a network blip: TCP's retransmission backoff stretches a cut of a few seconds
    # into a longer silence, and a blip must cost latency, not runs.
    runner_heartbeat_seconds: Annotated[
        PositiveFloat, Meta(description="how often each process renews its heartbeat row")
    ] = 0.5
    runner_heartbeat_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="a peer whose heartbeat is this old is dead: its runs are failed "
            "(a margin over a network blip; a really dead host's runs wait this long)"
        ),
    ] = 10.0
    runner_db_retry_seconds: Annotated[
        PositiveFloat,
        Meta(description="how long a run's last write retries while the database is unreachable"),
    ] = 60.0
    # -- the turn
    approval_ttl_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="how long a tool call waits in `awaiting_approval` (and a tool's "
            "question to the user in `awaiting_input`)"
        ),
    ] = 600.0
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
    completion_wait_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="`POST /v1/chat/completions` and `POST /v1/agent`: longest wait for a "
            "run's answer (then a `timeout` error; the run continues)"
        ),
    ] = 300.0
