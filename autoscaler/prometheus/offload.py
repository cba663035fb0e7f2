"""The worker thread that turns large Prometheus answers into series and readings, off the event loop.

One thread, not the loop's default pool of several: the work is pure Python, so more threads never run it
faster (one holds the interpreter lock at a time), but every runnable one takes its turns at the lock
ahead of the event loop's thread. With five of them busy on a 10,000-target service's answers, the loop
waited several lock turns for each of its own and fell 200+ ms behind its timers (bench/service.py); and
each thread kept a malloc arena of its own. With one, the loop waits at most one turn, and answers are
decoded one after another in the order they came.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

T = TypeVar("T")

__all__ = ["DecodeThread", "LoopPool", "Offload"]


class Offload(Protocol):
    """Runs a function off the event loop and hands back its result."""

    async def run(self, work: Callable[[], T]) -> T: ...


class LoopPool:
    """:class:`Offload` on a thread of the event loop's default pool (``asyncio.to_thread``)."""

    async def run(self, work: Callable[[], T]) -> T:
        return await asyncio.to_thread(work)


class DecodeThread:
    """:class:`Offload` on one worker thread, started on first use and ended by :meth:`close`."""

    def __init__(self, name: str = "prometheus-decode") -> None:
        self._name = name
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, work: Callable[[], T]) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    def close(self) -> None:
        """Work not started is dropped; what runs finishes in the thread (a thread cannot be stopped)."""
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.shutdown(wait=False, cancel_futures=True)
