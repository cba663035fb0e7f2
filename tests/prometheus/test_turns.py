"""Work in steps on the event loop: the loop runs other work between the steps; the value comes back."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Generator, Iterator

import pytest

from autoscaler.loop.turns import collector_paused, in_turns


def three_steps(log: list[str]) -> Generator[None, None, int]:
    for step in range(3):
        log.append(f"step {step}")
        if step < 2:
            yield
    return 42


async def test_other_tasks_run_between_the_steps() -> None:
    log: list[str] = []

    async def other() -> None:
        for turn in range(2):
            log.append(f"other {turn}")
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    assert await in_turns(three_steps(log)) == 42
    await task
    assert log == ["step 0", "other 0", "step 1", "other 1", "step 2"]


async def test_work_without_a_yield_takes_no_turn() -> None:
    def at_once() -> Generator[None, None, str]:
        return "done"
        yield  # a generator that returns before its first yield

    log: list[str] = []

    async def other() -> None:
        log.append("other")

    task = asyncio.create_task(other())
    assert await in_turns(at_once()) == "done"
    assert log == []  # the other task has not run: no turn was given
    await task


async def test_a_cancelled_run_leaves_the_rest_of_the_work_undone() -> None:
    log: list[str] = []

    def endless() -> Generator[None, None, None]:
        while True:
            log.append("step")
            yield

    task = asyncio.create_task(in_turns(endless()))
    for _ in range(3):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    done = len(log)
    await asyncio.sleep(0)
    assert len(log) == done and done >= 2


@pytest.fixture
def collections_run() -> Iterator[list[int]]:
    """The generation of every cyclic collection that starts while the test runs."""
    started: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        yield started
    finally:
        gc.callbacks.remove(seen)


def many_containers() -> list[list[int]]:
    """Far more live containers than the young generation's threshold: a collection would start."""
    return [[i] for i in range(3 * gc.get_threshold()[0] + 1000)]


async def test_no_collection_starts_inside_a_step_and_the_collector_runs_again_after_it(
    collections_run: list[int],
) -> None:
    held: list[bool] = []
    stepping = [False]
    inside_a_step: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and stepping[0]:
            inside_a_step.append(info["generation"])

    def heavy() -> Generator[None, None, int]:
        stepping[0] = True
        held.append(gc.isenabled())
        made = len(many_containers())  # a decoded slice of an answer, freed at the end of its step
        stepping[0] = False
        yield
        stepping[0] = True
        held.append(gc.isenabled())
        made += len(many_containers())
        stepping[0] = False
        return made

    gc.callbacks.append(seen)
    try:
        assert gc.isenabled()
        assert await in_turns(heavy()) == 2 * (3 * gc.get_threshold()[0] + 1000)
    finally:
        gc.callbacks.remove(seen)
    assert held == [False, False]
    # Each step made three times the threshold's containers: with the collector on, they start collections.
    # One may start in the turn between the steps (the loop's own allocations can tip a count left near the
    # threshold by the tests before): that is allowed, only a step is kept free of them.
    assert inside_a_step == []
    assert gc.isenabled()
    before = len(collections_run)
    many_containers()
    assert len(collections_run) > before  # and now they do


def test_a_paused_block_leaves_a_collector_that_was_off_off_and_one_that_was_on_on(collections_run: list[int]) -> None:
    gc.disable()
    try:
        with collector_paused():
            many_containers()
        assert not gc.isenabled()  # the service holds it off through its start-up: a block must not undo that
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        many_containers()
        raise RuntimeError("a failed decode")
    assert gc.isenabled() and collections_run == []
