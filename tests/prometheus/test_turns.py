"""Work in steps on the event loop: the loop runs other work between the steps; the value comes back."""

from __future__ import annotations

import asyncio
from collections.abc import Generator

import pytest

from autoscaler.prometheus.turns import in_turns


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
