"""OpenTelemetry traces, optional: off unless `OTEL_ENABLED` (and the `otel` extra).

`span()` is what the code calls; it does nothing while tracing is off, so the model door
and the tool executor pay nothing for it. When on, requests are traced by Litestar's
OpenTelemetry plugin, and model and tool calls are spans of their own (children of the
request's span where a request started them; the runner's turns are their own traces).
The SDK is imported only when tracing is enabled.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from app.settings import SettingsError

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

logger = logging.getLogger(__name__)
SERVICE_NAME = "toolcells"
NEEDS_EXTRA = "OTEL_ENABLED needs the OpenTelemetry packages: uv sync --extra otel"
_tracer: Tracer | None = None


class TracingUnavailable(SettingsError):
    """OTEL_ENABLED is set but the OpenTelemetry packages are not installed."""


@lru_cache(maxsize=1)
def default_provider() -> TracerProvider:
    """The process's provider: spans batched to the OTLP endpoint the standard
    `OTEL_EXPORTER_OTLP_*` variables name (`OTEL_SERVICE_NAME` overrides the name)."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TracingUnavailable(NEEDS_EXTRA) from exc
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE_NAME}
    provider = TracerProvider(resource=Resource.create(named))
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        logger.warning("OTEL_ENABLED: no OTLP exporter installed; spans are not exported")
    else:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def enable(provider: TracerProvider) -> None:
    global _tracer
    _tracer = provider.get_tracer(SERVICE_NAME)


def disable() -> None:
    global _tracer
    _tracer = None


def enabled() -> bool:
    return _tracer is not None


@asynccontextmanager
async def span(name: str, attributes: Mapping[str, Any] | None = None) -> AsyncIterator[None]:
    """A span around the block (an exception marks it as an error); a no-op when off."""
    tracer = _tracer
    if tracer is None:
        yield
        return
    with tracer.start_as_current_span(name, attributes=dict(attributes or {})):
        yield
