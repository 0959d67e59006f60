"""The metrics module's own rules: push outcomes, capped label values."""

from __future__ import annotations

from prometheus_client import REGISTRY, generate_latest

from app.observability import metrics
from tests.support.metrics import Scrape


def scrape() -> Scrape:
    return Scrape(generate_latest(REGISTRY).decode())


def test_record_push_counts_outcomes() -> None:
    before = scrape()
    metrics.record_push("sent")
    metrics.record_push("sent")
    metrics.record_push("invalid_token")
    moved = scrape() - before
    assert moved.value("toolcells_push_notifications_total", outcome="sent") == 2
    assert moved.value("toolcells_push_notifications_total", outcome="invalid_token") == 1


def test_label_values_from_outside_are_capped() -> None:
    label = "test-cap"
    values = [metrics.bounded(label, f"made-up-{n}") for n in range(metrics.MAX_LABEL_VALUES + 5)]
    assert values[: metrics.MAX_LABEL_VALUES] == [
        f"made-up-{n}" for n in range(metrics.MAX_LABEL_VALUES)
    ]
    assert set(values[metrics.MAX_LABEL_VALUES :]) == {"other"}
    assert metrics.bounded(label, "made-up-0") == "made-up-0"  # a known value stays itself
