"""A real model's pacing, and the tokens that carry their own send time.

Every answer token is `w<index>@<send µs> ` (the first also `+<model µs>`): the fake
model writes the moment it sends the token, on `time.monotonic()`, a clock every process
on the machine shares (Linux CLOCK_MONOTONIC), so the client's receive time minus it is
the token's exact trip through the server, whatever the frames coalesced. `<model µs>` is
the time the user waited on the model itself before that token (the tool call's stream
and both calls' time to first token): the rest of the wait for the first token is the
server's (the first-token overhead).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

TOKEN = re.compile(r"w(\d+)@(\d+)(?:\+(\d+))?")


@dataclass(frozen=True)
class Pacing:
    ttft: float = 0.3  # seconds from the request to the first chunk
    tokens_per_second: float = 40.0
    answer_tokens: int = 120
    argument_pieces: int = 12  # the tool call's arguments arrive in this many chunks

    def to_env(self) -> dict[str, str]:
        """For the fake model's process (`from_env`)."""
        return {
            "BENCH_TTFT": str(self.ttft),
            "BENCH_TOKENS_PER_SECOND": str(self.tokens_per_second),
            "BENCH_ANSWER_TOKENS": str(self.answer_tokens),
            "BENCH_ARGUMENT_PIECES": str(self.argument_pieces),
        }

    @classmethod
    def from_env(cls) -> Pacing:
        return cls(
            ttft=float(os.environ.get("BENCH_TTFT", cls.ttft)),
            tokens_per_second=float(
                os.environ.get("BENCH_TOKENS_PER_SECOND", cls.tokens_per_second)
            ),
            answer_tokens=int(os.environ.get("BENCH_ANSWER_TOKENS", cls.answer_tokens)),
            argument_pieces=int(os.environ.get("BENCH_ARGUMENT_PIECES", cls.argument_pieces)),
        )


def micros(seconds: float) -> int:
    return int(seconds * 1_000_000)


def token(index: int, sent: float, model_wait: float | None = None) -> str:
    """Answer token `index`, sent at `sent` (monotonic seconds); `model_wait`: the model's
    own time before it (first token only)."""
    own = "" if model_wait is None else f"+{micros(model_wait)}"
    return f"w{index}@{micros(sent)}{own} "


class TokenClock:
    """One turn's answer as the client sees it: each token counted once, when it first
    arrives, whichever frame (a message's content, a delta, the final message) brings it."""

    def __init__(self, posted: float) -> None:
        self.posted = posted  # the client sent the message (monotonic seconds)
        self.seen: set[int] = set()
        self.latencies: list[float] = []  # token sent by the model -> received, seconds
        self.first_token_overhead: float | None = None  # posted -> first token, minus model

    def received(self, text: str, at: float) -> None:
        for match in TOKEN.finditer(text):
            index = int(match[1])
            if index in self.seen:
                continue
            self.seen.add(index)
            self.latencies.append(at - int(match[2]) / 1_000_000)
            if index == 0 and match[3] is not None:
                model_wait = int(match[3]) / 1_000_000
                self.first_token_overhead = at - self.posted - model_wait
