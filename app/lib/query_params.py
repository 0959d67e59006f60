"""Query parameters held to what the spec says, where Litestar's decoder is lenient."""

from __future__ import annotations

from collections.abc import Mapping

from app.lib.problems import ProblemException


def require_iso_datetime(query: Mapping[str, str], name: str) -> None:
    """A date-time query parameter is ISO 8601, as the spec says. Litestar's decoder would
    also read a bare number as seconds since 1970, which no client means: refuse it with
    the same 400 problem as any other malformed parameter."""
    raw = query.get(name)
    if raw is not None and raw.strip().lstrip("+-").replace(".", "", 1).isdigit():
        raise ProblemException(
            400,
            f"{name} must be an ISO 8601 date-time, e.g. 2026-11-01T00:00:00Z.",
            errors=[{"field": name, "message": "not a date-time", "source": "query"}],
        )
