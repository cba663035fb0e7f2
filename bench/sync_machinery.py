"""What a sync's scheduling machinery costs, without its work: the ceiling of a per-namespace sync path.

Every target has a reconciler task of its own (``service/sync/reconciler.py``): it waits for its namespace's tick
(``TickTimers``, through the ``TurnPacer``), takes a concurrency slot, gives it back while the
``MetricsBatcher`` reads its metrics, gets it back, decides, reports. That machinery is the same for every
sync whatever its work, so it is what an alternative design (one task per namespace and tick, its targets'
syncs run one after the other, with no per-target task, slot or future) could save. This runs the service's
own classes with the work left out: ``per-target`` is the service's structure (a chain of three coroutines a
sync, as ``run`` → ``_sync`` → ``observe``); ``per-namespace`` is the floor of the alternative (one task a
namespace, one read a tick, a pacer turn every ``PER_TURN`` targets). The metrics "answer" after 50 ms.

The period is compressed (1.5 s instead of 15 s) to count many syncs; the figure is CPU per sync, and what
that would be per 1,000 targets at the service's 15 s period. The collector runs as the service's does after
start-up (``loop/collector.py``: start-up frozen, the steady thresholds), on uvloop as the service. Run:

    python bench/sync_machinery.py                       # both structures, 10,000 targets in 50 namespaces
    python bench/sync_machinery.py --mode per-target --targets 3000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autoscaler.core.observation import MetricReading, PodsReading
from autoscaler.core.spec import CrossVersionObjectReference
from autoscaler.loop.collector import MIDDLE_THRESHOLD, NEVER, YOUNG_THRESHOLD
from autoscaler.loop.pacing import PER_TURN, TurnPacer
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import OnReady
from autoscaler.service.app import event_loop_factory
from autoscaler.service.sync.batcher import MetricsBatcher
from autoscaler.service.sync.schedule import ConcurrencySlot, Schedule, TickTimers

SERVICE_PERIOD = 15.0
ANSWER_SECONDS = 0.05
ROW: list[MetricReading] = [PodsReading(pods={})]


async def answer(
    queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
) -> list[list[MetricReading]]:
    """A Prometheus that answers every read after ``ANSWER_SECONDS``, with the same reading for everyone."""
    await asyncio.sleep(ANSWER_SECONDS)
    return [ROW for _ in queries]


def query(namespace: str, name: str) -> TargetQuery:
    return TargetQuery(
        namespace, name, CrossVersionObjectReference("Deployment", name, "apps/v1"), f"app={name}", (), ()
    )


class Counter:
    syncs = 0


async def per_target(namespace: str, name: str, machinery: Machinery, counter: Counter) -> None:
    """The service's structure: one task a target, for good (``TargetReconciler.run``)."""
    wanted = query(namespace, name)

    async def observe(slot: ConcurrencySlot) -> list[MetricReading]:
        async with ConcurrencySlot.given_back(slot):
            return await machinery.batcher.read(wanted)

    async def sync(slot: ConcurrencySlot) -> None:
        await observe(slot)
        counter.syncs += 1

    schedule = machinery.schedule
    planned = schedule.next_tick(namespace, time.monotonic())
    slot = ConcurrencySlot(machinery.semaphore)
    while True:
        await machinery.timers.at(planned)
        async with slot:
            await sync(slot)
        planned = schedule.after_sync(namespace, planned, time.monotonic())


async def per_namespace(namespace: str, targets: int, machinery: Machinery, counter: Counter) -> None:
    """The floor of a per-namespace path: one task a namespace, one read a tick, the syncs in turns."""
    wanted = query(namespace, namespace)
    schedule = machinery.schedule
    planned = schedule.next_tick(namespace, time.monotonic())
    while True:
        await machinery.timers.at(planned)
        await machinery.batcher.read(wanted)
        for index in range(targets):
            counter.syncs += 1
            if index % PER_TURN == PER_TURN - 1:
                await machinery.pacer.turn()
        planned = schedule.after_sync(namespace, planned, time.monotonic())


class Machinery:
    def __init__(self, period: float, concurrency: int) -> None:
        self.pacer = TurnPacer()
        self.timers = TickTimers(self.pacer)
        self.schedule = Schedule(period, 0.1)
        self.semaphore = asyncio.Semaphore(concurrency)
        self.batcher = MetricsBatcher(answer, window=min(1.0, period / 15), pacer=self.pacer)


async def measure(mode: str, targets: int, namespaces: int, period: float, periods: int) -> tuple[float, int]:
    """CPU seconds per sync and the syncs counted, over ``periods`` periods after two to settle."""
    machinery, counter = Machinery(period, 50), Counter()
    if mode == "per-target":
        tasks = [
            asyncio.create_task(per_target(f"ns-{i % namespaces}", f"t-{i}", machinery, counter))
            for i in range(targets)
        ]
    else:
        tasks = [
            asyncio.create_task(per_namespace(f"ns-{i}", targets // namespaces, machinery, counter))
            for i in range(namespaces)
        ]
    await asyncio.sleep(2 * period)
    gc.collect()
    gc.freeze()
    syncs, cpu = counter.syncs, time.process_time()
    await asyncio.sleep(periods * period)
    cpu, syncs = time.process_time() - cpu, counter.syncs - syncs
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await machinery.batcher.close()
    gc.unfreeze()
    return cpu / max(1, syncs), syncs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("both", "per-target", "per-namespace"), default="both")
    parser.add_argument("--targets", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--period", type=float, default=1.5, help="seconds (compressed; figures scale to 15 s)")
    parser.add_argument("--periods", type=int, default=8)
    args = parser.parse_args()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, NEVER)
    modes = ("per-target", "per-namespace") if args.mode == "both" else (args.mode,)
    print(f"{args.targets:,} targets in {args.namespaces} namespaces, {args.periods} periods of {args.period} s")
    print(f"{'structure':<14} {'syncs':>8} {'µs CPU a sync':>14} {'mCPU per 1,000 targets at 15 s':>32}")
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        for mode in modes:
            per_sync, syncs = runner.run(measure(mode, args.targets, args.namespaces, args.period, args.periods))
            print(f"{mode:<14} {syncs:>8} {per_sync * 1e6:>14.1f} {per_sync * 1e6 / SERVICE_PERIOD:>32.2f}")


if __name__ == "__main__":
    main()
