"""Reading a `/metrics` scrape in tests."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


class Scrape:
    """One scrape: `scrape.value("toolcells_runs_total", status="completed")` (0 if absent)."""

    def __init__(self, text: str) -> None:
        self.samples = [
            sample for family in text_string_to_metric_families(text) for sample in family.samples
        ]

    def value(self, name: str, **labels: str) -> float:
        return sum(
            sample.value
            for sample in self.samples
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
        )

    def __sub__(self, before: Scrape) -> Delta:
        return Delta(self, before)


class Delta:
    """How much a metric moved between two scrapes."""

    def __init__(self, after: Scrape, before: Scrape) -> None:
        self.after, self.before = after, before

    def value(self, name: str, **labels: str) -> float:
        return self.after.value(name, **labels) - self.before.value(name, **labels)
