"""What runs while this process leads (:class:`~autoscaler.kube.leader.LeaderElector`'s other half): the
*started* callbacks as tasks, the leading scopes whose deadline follows the renewals, and the stop that
cancels the one and waits for the other before leadership is handed on."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import structlog

log = structlog.stdlib.get_logger("autoscaler.kube.leader")

StateCallback = Callable[[], Awaitable[None] | None]


class NotLeader(Exception):
    """Raised by :meth:`LeaderElector.assert_leading` (and by a leading scope whose lease ran out): this
    process must not act as the leader."""


class LeaderWork:
    def __init__(self, callback_timeout: float) -> None:
        self.callback_timeout = callback_timeout
        self._tasks: list[asyncio.Task[None]] = []
        self._scopes: set[asyncio.Timeout] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def start(self, callbacks: list[StateCallback]) -> None:
        """Run each *started* callback as a task until :meth:`stop`."""
        self._tasks = [asyncio.create_task(_run_started(cb), name=f"leader-work-{i}") for i, cb in enumerate(callbacks)]

    @asynccontextmanager
    async def scope(self, remaining: float, lease: str) -> AsyncIterator[float]:
        """A block of leader-only work with ``remaining`` seconds of lease; cancelled (:class:`NotLeader`)
        when the lease runs out or leadership ends while it runs."""
        scope = asyncio.timeout(remaining)
        self._scopes.add(scope)
        self._idle.clear()
        try:
            async with scope:
                yield remaining
        except TimeoutError as exc:
            if scope.expired():
                raise NotLeader(f"leadership of {lease} ended during the operation") from exc
            raise
        finally:
            self._scopes.discard(scope)
            if not self._scopes:
                self._idle.set()

    def extend(self, seconds_left: float) -> None:
        """The lease now lasts ``seconds_left`` more seconds: so do the scopes."""
        self._reschedule(asyncio.get_running_loop().time() + seconds_left)

    async def stop(self) -> None:
        """End every scope now, cancel the started tasks, and wait (bounded) for both to finish."""
        self._reschedule(asyncio.get_running_loop().time())
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=self.callback_timeout)
            if stuck:
                log.error("leader.work_not_stopped", tasks=[t.get_name() for t in stuck])
        try:
            await asyncio.wait_for(self._idle.wait(), self.callback_timeout)
        except TimeoutError:
            log.error("leader.scopes_not_exited", count=len(self._scopes))

    async def call(self, callback: Callable[..., Awaitable[None] | None], *args: str) -> None:
        """Await one callback, bounded by the callback timeout; its exception is logged, never raised."""
        try:
            async with asyncio.timeout(self.callback_timeout):
                await invoke(callback, *args)
        except TimeoutError:
            log.exception("leader.callback_failed", callback=getattr(callback, "__name__", repr(callback)))

    def _reschedule(self, when: float) -> None:
        for scope in list(self._scopes):
            if not scope.expired():
                scope.reschedule(when)


async def _run_started(callback: StateCallback) -> None:
    await invoke(callback, what="started")


async def invoke(callback: Callable[..., Awaitable[None] | None], *args: str, what: str | None = None) -> None:
    """Call ``callback`` (a plain function, or one that returns an awaitable, then awaited); an exception
    is logged as ``what`` (default: the callback's name), never raised."""
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("leader.callback_failed", callback=what or getattr(callback, "__name__", repr(callback)))
