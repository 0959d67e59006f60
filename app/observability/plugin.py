"""Wires request ids, log format, Prometheus metrics and optional traces into the app."""

from __future__ import annotations

import secrets
from typing import Any

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.connection import ASGIConnection
from litestar.enums import ScopeType
from litestar.exceptions import NotAuthorizedException
from litestar.handlers import BaseRouteHandler
from litestar.plugins import InitPlugin
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController

from app.observability import metrics, tracing
from app.observability.logs import logging_config
from app.observability.request_id import RequestIdMiddleware, add_request_id_header
from app.settings import Settings

METRICS_PATH = "/metrics"


def _metrics_token_guard(
    connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
) -> None:
    """`METRICS_TOKEN` set: a scrape must send it as a bearer token."""
    expected = connection.app.state.settings.metrics_token
    if expected is None:
        return
    sent = connection.headers.get("authorization", "")
    if not secrets.compare_digest(sent.encode(), f"Bearer {expected}".encode()):
        raise NotAuthorizedException("/metrics needs the METRICS_TOKEN as a bearer token.")


class MetricsController(PrometheusController):
    """`GET /metrics`: Prometheus text format; not part of the API (no OpenAPI entry)."""

    path = METRICS_PATH
    include_in_schema = False
    guards = [_metrics_token_guard]


def prometheus_config() -> PrometheusConfig:
    return PrometheusConfig(
        app_name="toolcells",
        prefix=metrics.PREFIX,
        group_path=True,  # the route's template, not every thread id: bounded labels
        exclude_unhandled_paths=True,
        exclude=[METRICS_PATH],
        scopes={ScopeType.HTTP},  # sockets are counted by toolcells_open_sockets
    )


class ObservabilityPlugin(InitPlugin):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        settings = self.settings
        app_config.logging_config = logging_config(settings)
        # First: the id is set before anything below it logs.
        app_config.middleware.insert(0, RequestIdMiddleware())
        app_config.before_send.append(add_request_id_header)
        if settings.metrics_enabled:
            app_config.middleware.append(prometheus_config().middleware)
            app_config.route_handlers.append(MetricsController)
        app_config.on_startup.append(self._start_tracing)
        app_config.on_shutdown.append(self._stop_tracing)
        return app_config

    def _start_tracing(self, app: Litestar) -> None:
        if self.settings.otel_enabled:
            tracing.enable(tracing.default_provider())

    def _stop_tracing(self, app: Litestar) -> None:
        if self.settings.otel_enabled:
            tracing.disable()


def observability_plugins(settings: Settings) -> list[InitPlugin]:
    """Ours, and Litestar's OpenTelemetry plugin when traces are on (it must be given to
    the app, not added by another plugin: the app wraps its router with it)."""
    plugins: list[InitPlugin] = [ObservabilityPlugin(settings)]
    if settings.otel_enabled:
        provider = tracing.default_provider()  # fails now, in one line, without the extra
        try:
            from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin
        except ImportError as exc:  # Litestar's MissingDependencyException is one
            raise tracing.TracingUnavailable(tracing.NEEDS_EXTRA) from exc

        config = OpenTelemetryConfig(tracer_provider=provider, exclude=[METRICS_PATH])
        plugins.append(OpenTelemetryPlugin(config))
    return plugins
