"""The realistic benchmark's measuring logic (bench/realistic): which token latencies and
which first-token overhead a turn's frames give, and the fake model's script."""

from __future__ import annotations

import json

from bench.realistic.load import Plan
from bench.realistic.model import Model
from bench.realistic.pacing import Pacing, TokenClock, token


def test_each_token_counts_once_when_it_first_arrives() -> None:
    clock = TokenClock(posted=10.0)
    # the message as created (tokens 0-1), a delta (2), then the final message (all)
    clock.received(token(0, 11.0, model_wait=0.9) + token(1, 11.025), at=11.1)
    clock.received(token(2, 11.05), at=11.12)
    clock.received(token(0, 11.0) + token(1, 11.025) + token(2, 11.05) + token(3, 11.075), 11.2)
    assert sorted(clock.seen) == [0, 1, 2, 3]
    assert [round(x, 3) for x in clock.latencies] == [0.1, 0.075, 0.07, 0.125]
    # POST at 10.0, first token read at 11.1, the model's own wait 0.9 s: 0.2 s is ours
    assert clock.first_token_overhead is not None
    assert round(clock.first_token_overhead, 3) == 0.2


def test_tokens_are_found_in_raw_json() -> None:
    clock = TokenClock(posted=0.0)
    line = "data: " + json.dumps([{"content": token(0, 1.0, 0.5) + token(1, 1.5)}, {}])
    clock.received(line, at=2.0)
    assert sorted(clock.seen) == [0, 1]
    assert clock.first_token_overhead == 1.5


def test_the_model_carries_its_wait_from_the_tool_call_to_the_answer() -> None:
    model = Model(Pacing(answer_tokens=3, argument_pieces=4))
    call = [step() for step in model.steps({"messages": [{"role": "user"}]}, arrived=0.0)]
    assert len(call) == 1 + 4 + 1  # the call's head, its argument pieces, the finish
    (call_id,) = model.model_wait
    history = [{"role": "user"}, {"role": "tool", "tool_call_id": call_id}]
    answer = [step() for step in model.steps({"messages": history}, arrived=0.0)]
    assert len(answer) == 3 + 1 and not model.model_wait
    assert b"+" in answer[0] and b"+" not in answer[1]  # the first token carries the wait
    assert answer[-1].endswith(b"0\r\n\r\n")  # the chunked body ends


def test_a_plan_splits_its_users_over_load_processes() -> None:
    plan = Plan(["b"], None, first=0, count=10, total=10, start=0, ramp=1, duration=1, timeout=1)
    parts = plan.split(3)
    assert [(p.first, p.count) for p in parts] == [(0, 4), (4, 4), (8, 2)]
    assert all(p.total == 10 for p in parts)
