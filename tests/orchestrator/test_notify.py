"""Wake-ups within a process and to the others (app/orchestrator/scheduling/notify.py): a run queued
here goes to this process's runner, and to the other processes only when no runner here
takes it; cancels and approvals go to every process; echoes of our own are ignored."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID, uuid4

import pytest

from app.orchestrator.scheduling import notify


@pytest.fixture
def heard() -> Iterator[list[tuple[str, UUID, bool]]]:
    """What a runner in this process would hear."""
    events: list[tuple[str, UUID, bool]] = []

    def listener(kind: notify.Kind, object_id: UUID, here: bool) -> None:
        events.append((kind, object_id, here))

    notify.add_listener(listener)
    yield events
    notify.remove_listener(listener)


@pytest.fixture
def relayed() -> Iterator[list[str]]:
    """What is sent to the other processes."""
    sent: list[str] = []
    notify.add_relay(sent.append)
    yield sent
    notify.remove_relay(sent.append)


def test_a_run_queued_here_goes_to_the_runner_here_only(
    heard: list[tuple[str, UUID, bool]], relayed: list[str]
) -> None:
    run_id = uuid4()
    notify._RunWakeups().run_queued(run_id)
    assert heard == [("queued", run_id, True)]
    assert relayed == []


def test_a_run_queued_in_a_process_without_a_runner_wakes_the_others(
    relayed: list[str],
) -> None:
    run_id = uuid4()
    notify._RunWakeups().run_queued(run_id)
    assert relayed == [notify.encode("queued", run_id)]


def test_a_cancel_is_heard_here_and_sent_to_the_others(
    heard: list[tuple[str, UUID, bool]], relayed: list[str]
) -> None:
    run_id = uuid4()
    notify._RunWakeups().cancel_requested(run_id)
    assert heard == [("cancel", run_id, True)]
    assert relayed == [notify.encode("cancel", run_id)]


def test_wake_ups_from_other_processes_are_heard_and_our_echoes_ignored(
    heard: list[tuple[str, UUID, bool]],
) -> None:
    run_id = uuid4()
    notify.receive(notify.encode("queued", run_id))  # our own, back from the relay
    notify.receive(f"otherprocess:q{run_id.hex}")
    notify.receive("otherprocess:qnot-a-uuid")
    notify.receive("otherprocess:x" + run_id.hex)
    assert heard == [("queued", run_id, False)]
