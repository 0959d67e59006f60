"""Settings of operating in production (app/observability/): logs, metrics, traces, and
the process's garbage collection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from msgspec import Meta


@dataclass(frozen=True)
class ObservabilitySettings:
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
            description="one INFO line per HTTP request once its response is sent (logger "
            "`app.access`; in JSON with `method`, `path`, `query`, `status`, `duration_ms`, "
            "`client`, `request_id`); off saves its CPU (benchmark)"
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
        Meta(
            description="when set, `/metrics` requires `Authorization: Bearer <token>`; "
            "unset, it answers only requests from the host itself (a loopback peer, "
            "not forwarded by a proxy)"
        ),
    ] = None
    otel_enabled: Annotated[
        bool,
        Meta(
            description="OpenTelemetry traces (requests, model and tool calls), exported over "
            "OTLP as the standard `OTEL_EXPORTER_OTLP_*` variables say (needs the `otel` extra)"
        ),
    ] = False
