"""A few syncs' work per turn of the event loop: the pacer itself, and the syncs of a namespace that
share a tick going through it."""

from __future__ import annotations

import asyncio
import itertools
import time

from autoscaler.loop.pacing import PER_TURN, TurnPacer
from kube_emulator import KubeEmulator
from tests.service.cluster import FakeMetrics, deployment, eventually, target
from tests.service.manager_setup import running


async def per_turn(pacer: TurnPacer, callers: int) -> tuple[list[int], list[int]]:
    """Start ``callers`` at once; how many had passed at each turn of the loop, and in which order."""
    passed: list[int] = []
    seen: list[int] = []

    async def caller(index: int) -> None:
        await pacer.turn()
        passed.append(index)

    async def probe() -> None:
        while len(passed) < callers:
            seen.append(len(passed))
            await asyncio.sleep(0)
        seen.append(len(passed))

    await asyncio.gather(probe(), *(caller(i) for i in range(callers)))
    return [after - before for before, after in itertools.pairwise(seen)], passed


async def test_at_most_per_turn_callers_pass_in_a_turn_in_the_order_they_came() -> None:
    steps, passed = await per_turn(TurnPacer(4), 20)
    assert passed == list(range(20))
    assert max(steps) <= 4, steps
    assert sum(1 for step in steps if step) >= 5


async def test_a_lone_caller_passes_in_the_next_turn() -> None:
    pacer = TurnPacer(3)
    task = asyncio.ensure_future(pacer.turn())
    await asyncio.sleep(0)  # the task asked
    await asyncio.sleep(0)  # the pacer's turn let it go
    await asyncio.sleep(0)  # it returned
    assert task.done()


async def test_a_caller_cancelled_while_waiting_takes_no_ones_place() -> None:
    pacer = TurnPacer(1)
    passed: list[int] = []

    async def caller(index: int) -> None:
        await pacer.turn()
        passed.append(index)

    tasks = [asyncio.ensure_future(caller(i)) for i in range(4)]
    for _ in range(3):  # all four ask in one turn, the pacer lets one go in the next, it returns in the third
        await asyncio.sleep(0)
    assert passed == [0]
    tasks[1].cancel()
    turns = 0
    while len(passed) < 2:
        await asyncio.sleep(0)
        turns += 1
    assert passed == [0, 2] and turns <= 2  # the next turn's place went to the one after the cancelled caller
    await asyncio.gather(tasks[2], tasks[3])
    assert passed == [0, 2, 3] and tasks[1].cancelled()


async def test_the_targets_of_a_namespace_start_their_syncs_a_few_per_turn(emu: KubeEmulator) -> None:
    """64 targets of one namespace sync on the same tick; with room for all of them under
    ``sync.concurrency``, no more than PER_TURN begin a sync in one turn of the loop (a sync asks the
    clock for its "now" as it begins)."""
    targets = 64
    for index in range(targets):
        emu.create(deployment(f"w{index}", 1))
        emu.create(target(f"t{index}", f"w{index}"))
    metrics = FakeMetrics()
    metrics.set("queue", 10)
    starts: list[int] = []

    def clock() -> float:
        starts.append(1)
        return time.time()

    async with running(emu, metrics, concurrency=1000, clock=clock) as manager:
        await eventually(lambda: len(manager.running) == targets and len(starts) >= targets, what="a first pass")
        first_pass = len(starts)
        seen: list[int] = []
        while len(starts) < first_pass + targets:  # the second pass: every target on the namespace's tick
            seen.append(len(starts))
            await asyncio.sleep(0)
        seen.append(len(starts))
    steps = [after - before for before, after in itertools.pairwise(seen)]
    assert sum(steps) >= targets and max(steps) <= PER_TURN, steps


async def test_futures_passed_on_share_the_bound_with_callers_and_keep_their_place() -> None:
    """The batcher hands a sync its readings, and a tick's timer ends its targets' waits, through the same
    pacer as :meth:`TurnPacer.turn`: one bound for all, in the order they came, each with its value."""
    loop = asyncio.get_running_loop()
    pacer = TurnPacer(3)
    passed: list[str] = []

    async def caller(index: int) -> None:
        await pacer.turn()
        passed.append(f"turn {index}")

    async def handed(future: asyncio.Future[str]) -> None:
        passed.append(await future)

    futures = [loop.create_future() for _ in range(6)]
    callers = [asyncio.ensure_future(caller(i)) for i in range(3)]
    waiters = [asyncio.ensure_future(handed(f)) for f in futures]
    await asyncio.sleep(0)  # the callers asked first
    for index, future in enumerate(futures):
        pacer.pass_on(future, f"row {index}")
    futures[1].cancel()  # a sync cancelled while its readings were queued: no one's place taken
    seen: list[int] = []
    while len(passed) < 8:
        seen.append(len(passed))
        await asyncio.sleep(0)
    seen.append(len(passed))
    assert passed == ["turn 0", "turn 1", "turn 2", "row 0", "row 2", "row 3", "row 4", "row 5"]
    assert max(after - before for before, after in itertools.pairwise(seen)) <= 3
    await asyncio.gather(*callers, *waiters, return_exceptions=True)
