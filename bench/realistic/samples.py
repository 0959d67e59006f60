"""What the simulated users record, merged over users and load processes."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.realistic.pacing import TokenClock


@dataclass
class Samples:
    token_latency: list[float] = field(default_factory=list)  # model sent -> client got, s
    first_token_overhead: list[float] = field(default_factory=list)  # s, model's wait excluded
    completed: int = 0  # turns whose run completed
    in_window: int = 0  # of those, ended while every user was on (turns/s counts these)
    failed: int = 0  # run failed or cancelled, an HTTP error, no answer in a completed run
    why_failed: dict[str, int] = field(default_factory=dict)  # reason -> count
    timeouts: int = 0  # no end within the turn timeout (then cancelled)
    closed: int = 0  # the socket closed under a turn
    cpu: float = 0.0  # the load generator's own CPU seconds (user + system)
    # how late the load generator's loop woke a 10 ms timer, s: its own delays, which
    # its clocks count as the server's (a busy machine, or a load process at its limit)
    loop_lag: list[float] = field(default_factory=list)

    def add_turn(self, clock: TokenClock | None) -> None:
        """A turn's tokens, whatever its end (the tokens that came are real latencies)."""
        if clock is None:
            return
        self.token_latency += clock.latencies
        if clock.first_token_overhead is not None:
            self.first_token_overhead.append(clock.first_token_overhead)

    def fail(self, reason: str) -> None:
        self.failed += 1
        self.why_failed[reason] = self.why_failed.get(reason, 0) + 1

    def merge(self, other: Samples) -> None:
        self.token_latency += other.token_latency
        self.first_token_overhead += other.first_token_overhead
        self.completed += other.completed
        self.in_window += other.in_window
        self.failed += other.failed
        for reason, count in other.why_failed.items():
            self.why_failed[reason] = self.why_failed.get(reason, 0) + count
        self.timeouts += other.timeouts
        self.closed += other.closed
        self.cpu += other.cpu
        self.loop_lag += other.loop_lag
