"""Lease candidates for the leader-election tests (test_leader*.py): an elector in a task with every callback
recorded against time.monotonic(), with timings scaled down (lease 1 s, renew deadline 0.6 s, retry 0.1 s),
and what the tests read back from the emulator's Lease and request log.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.leader import LeaderElector
from kube_emulator import KubeEmulator

NAMESPACE, NAME = "kube-system", "autoscaler"


FAST: dict[str, float] = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}


MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Candidate:
    """An elector running in a task, with every callback recorded against time.monotonic()."""

    def __init__(self, api: ApiClient, identity: str, **options: Any) -> None:
        self.elector = LeaderElector(api, namespace=NAMESPACE, name=NAME, identity=identity, **(FAST | options))
        self.started: list[float] = []
        self.stopped: list[float] = []
        self.leaders: list[str] = []
        self.elector.on_started_leading(lambda: self.started.append(time.monotonic()))
        self.elector.on_stopped_leading(self._stopped)
        self.elector.on_new_leader(self.leaders.append)
        self.task: asyncio.Task[None] | None = None

    async def _stopped(self) -> None:  # async callbacks are awaited too
        self.stopped.append(time.monotonic())

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run())
        return self

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


@contextlib.asynccontextmanager
async def running(*candidates: Candidate) -> AsyncIterator[None]:
    for candidate in candidates:
        candidate.start()
    try:
        yield
    finally:
        for candidate in candidates:
            await candidate.stop()


async def eventually(predicate: Callable[[], bool], within: float = 3.0) -> float:
    """Wait until ``predicate()``; return the monotonic time it was first seen true."""
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)
    return time.monotonic()


def lease_spec(emulator: KubeEmulator) -> dict[str, Any]:
    lease = emulator.get("leases", NAME, NAMESPACE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


def wall(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def lease_requests(emulator: KubeEmulator, since: float) -> list[float]:
    return [r.started for r in emulator.requests.records if r.resource == "leases" and r.started >= since]
