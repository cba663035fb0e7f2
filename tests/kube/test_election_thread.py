"""Leader election in its own thread (kube/election_thread.py): a service loop that is blocked for longer than
the Lease lasts keeps the Lease, while the same elector on that loop loses it. The emulator runs in a thread
of its own here, as the API server is another process in a cluster: a blocked test loop must not block it.

Timings are scaled down (lease 2 s, renew deadline 1.2 s, retry 0.1 s), less far than test_leader.py's: two
threads and the emulator share one interpreter here, and on a loaded CI machine a renewal once took longer
than a 0.6 s deadline before the loop was ever blocked."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.election_thread import ElectionThread
from autoscaler.kube.leader import LeaderElector
from kube_emulator import KubeEmulator

NAMESPACE, NAME = "kube-system", "autoscaler"
FAST: dict[str, float] = {"lease_duration": 2.0, "renew_deadline": 1.2, "retry_period": 0.1}
BLOCK_SECONDS = 5.0  # two and a half lease durations
T = TypeVar("T")


class EmulatorThread:
    """A :class:`KubeEmulator` serving from its own thread and event loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="emulator", daemon=True)
        self.emulator: KubeEmulator | None = None

    def __enter__(self) -> EmulatorThread:
        self._thread.start()
        self.emulator = self.call(self._start)
        return self

    def __exit__(self, *_: object) -> None:
        assert self.emulator is not None
        self.call(self.emulator.stop)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    @staticmethod
    async def _start() -> KubeEmulator:
        emulator = KubeEmulator(seed=3)
        await emulator.start()
        return emulator

    def call(self, coroutine: Callable[[], Any]) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine(), self._loop)
        return future.result(10)

    def lease(self) -> dict[str, Any]:
        assert self.emulator is not None
        emulator = self.emulator

        async def read() -> dict[str, Any]:
            lease = emulator.get("leases", NAME, NAMESPACE)
            return dict(lease["spec"]) if lease else {}

        spec: dict[str, Any] = self.call(read)
        return spec

    async def connect(self) -> ApiClient:
        assert self.emulator is not None
        return self.emulator.api_client()


@pytest.fixture
def cluster() -> Iterator[EmulatorThread]:
    with EmulatorThread() as running:
        yield running


async def eventually(predicate: Callable[[], bool], within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


class Recorder:
    """The service's side of the callbacks: when they ran, and on which thread."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopped: list[str] = []
        self.work_cancelled = asyncio.Event()

    async def lead(self) -> None:
        self.started.append(threading.current_thread().name)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.work_cancelled.set()
            raise

    async def follow(self) -> None:
        assert self.work_cancelled.is_set(), "the leader's work is stopped before the stopped callbacks"
        self.stopped.append(threading.current_thread().name)


def election(cluster: EmulatorThread, identity: str, recorder: Recorder | None = None) -> ElectionThread:
    thread = ElectionThread(cluster.connect, namespace=NAMESPACE, name=NAME, identity=identity, **FAST)
    if recorder is not None:
        thread.on_started_leading(recorder.lead)
        thread.on_stopped_leading(recorder.follow)
    return thread


@contextlib.asynccontextmanager
async def campaigning(*elections: ElectionThread | LeaderElector) -> Any:
    tasks = [asyncio.create_task(e.run()) for e in elections]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_blocked_loop_keeps_the_lease(cluster: EmulatorThread) -> None:
    recorder = Recorder()
    a, b = election(cluster, "a", recorder), election(cluster, "b")
    async with campaigning(a):
        await eventually(lambda: a.is_leader and recorder.started != [])
        async with campaigning(b):
            await eventually(lambda: b.leader_identity == "a")
            before, stops_before = cluster.lease(), len(recorder.stopped)
            time.sleep(BLOCK_SECONDS)  # noqa: ASYNC251 — the point: this loop does nothing meanwhile
            after = cluster.lease()
            assert after["holderIdentity"] == "a" and after["leaseTransitions"] == before["leaseTransitions"]
            assert after["renewTime"] > before["renewTime"]  # renewed while the loop was blocked
            assert a.is_leader and not b.is_leader
            # The service's stopped callbacks run on this loop: had leadership ended during the block, they
            # would have run as soon as it was free. Give them that turn, then count.
            await asyncio.sleep(0.2)
            assert len(recorder.stopped) == stops_before
    # The leader's work ran on the service's loop (the main thread), as its stopped callbacks did.
    assert set(recorder.started) == {threading.main_thread().name} and recorder.stopped == recorder.started
    assert cluster.lease()["holderIdentity"] == ""  # released on shutdown


async def test_the_same_elector_on_the_blocked_loop_loses_the_lease(cluster: EmulatorThread) -> None:
    """The contrast that shows what the thread is for (and that the test above can fail)."""
    async with cluster.emulator.api_client() as api:  # type: ignore[union-attr]
        a = LeaderElector(api, namespace=NAMESPACE, name=NAME, identity="a", **FAST)
        b = election(cluster, "b")
        async with campaigning(a):
            await eventually(lambda: a.is_leader)
            async with campaigning(b):
                await eventually(lambda: b.leader_identity == "a")
                time.sleep(BLOCK_SECONDS)  # noqa: ASYNC251
                assert cluster.lease()["holderIdentity"] == "b" and b.is_leader
                assert not a.is_leader  # the fence closed on time, by the clock, even on a blocked loop


async def test_a_lost_lease_stops_the_work_on_the_service_loop_then_campaigns_again(cluster: EmulatorThread) -> None:
    recorder = Recorder()
    a = election(cluster, "a", recorder)
    async with campaigning(a):
        await eventually(lambda: a.is_leader and recorder.started != [])
        assert cluster.emulator is not None
        emulator = cluster.emulator

        async def take() -> None:  # someone else writes the lease with a long duration
            emulator.patch(
                "leases", NAME, {"spec": {"holderIdentity": "x", "leaseDurationSeconds": 2}}, namespace=NAMESPACE
            )

        cluster.call(take)
        await recorder.work_cancelled.wait()
        await eventually(lambda: recorder.stopped != [] and not a.is_leader)
        await eventually(lambda: a.is_leader and len(recorder.started) == 2, within=10)  # "x" never renews
    assert recorder.stopped == [threading.main_thread().name] * 2
