"""Counting the turns of the event loop that other tasks get while some awaited work runs."""

from __future__ import annotations

import asyncio
from types import TracebackType


class LoopTurns:
    """``async with LoopTurns() as turns:`` … ``turns.count``: how many turns a task of its own got on the
    loop while the block ran (work that never gives the loop a turn leaves it at 0)."""

    def __init__(self) -> None:
        self.count = 0
        self._counter: asyncio.Task[None] | None = None

    async def _count(self) -> None:
        while True:
            await asyncio.sleep(0)
            self.count += 1

    async def __aenter__(self) -> LoopTurns:
        self._counter = asyncio.create_task(self._count())
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._counter is not None
        self._counter.cancel()
