"""Wires request ids, log format and the access log, Prometheus metrics and optional traces
into the app."""

from __future__ import annotations

import ipaddress
import secrets
from typing import Any

from litestar import Litestar
from litestar.config.app import AppConfig
from litestar.connection import ASGIConnection
from litestar.enums import ScopeType
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers import BaseRouteHandler
from litestar.plugins import InitPlugin
from litestar.plugins.prometheus import PrometheusConfig, PrometheusController

from app.observability import metrics, tracing
from app.observability.logs import AccessLog, logging_config
from app.observability.request_id import RequestIdMiddleware, add_request_id_header
from app.settings import Settings

METRICS_PATH = "/metrics"


# Headers a proxy adds when it forwards a request: a loopback peer sending one is a proxy
# on this host relaying someone else's request.
_FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


def _is_local(connection: ASGIConnection[Any, Any, Any, Any]) -> bool:
    """The socket's peer is this host, and no proxy says it forwarded the request."""
    if connection.client is None:
        return False
    try:
        address = ipaddress.ip_address(connection.client.host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback and not any(
        header in connection.headers for header in _FORWARDING_HEADERS
    )


def _metrics_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """`METRICS_TOKEN` set: a scrape must send it as a bearer token. Unset: only this host
    may scrape (a laptop, a sidecar); anyone else is told to set the token."""
    expected = connection.app.state.settings.metrics_token
    if expected is None:
        if not _is_local(connection):
            raise PermissionDeniedException(
                "/metrics answers only requests from this host: set METRICS_TOKEN and scrape "
                "with it as a bearer token."
            )
        return
    sent = connection.headers.get("authorization", "")
    if not secrets.compare_digest(sent.encode(), f"Bearer {expected}".encode()):
        raise NotAuthorizedException("/metrics needs the METRICS_TOKEN as a bearer token.")


class MetricsController(PrometheusController):
    """`GET /metrics`: Prometheus text format; not part of the API (no OpenAPI entry)."""

    path = METRICS_PATH
    include_in_schema = False
    guards = [_metrics_guard]


def prometheus_config() -> PrometheusConfig:
    return PrometheusConfig(
        app_name="toolcells",
        prefix=metrics.PREFIX,
        group_path=True,  # the route's template, not every thread id: bounded labels
        exclude_unhandled_paths=True,
        exclude=[METRICS_PATH],
        scopes={ScopeType.HTTP},  # sockets are counted by toolcells_open_sockets
    )


def _log_access(app: Litestar) -> None:
    """The access log around the app's whole handler (routing, CORS, traces), set once the
    app exists: a plugin sees only its config, and route middleware misses what the router
    answers itself (an unknown path's 404)."""
    if not isinstance(app.asgi_handler, AccessLog):
        app.asgi_handler = AccessLog(app.asgi_handler)


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
        if settings.access_log:
            app_config.on_startup.append(_log_access)
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
