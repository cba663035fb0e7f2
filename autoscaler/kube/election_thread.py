"""Leader election in a thread of its own, so that a busy event loop cannot cost the service its Lease.

client-go renews in its own goroutine; here the :class:`~autoscaler.kube.leader.LeaderElector` runs on its
own event loop, in its own thread, with its own API client. The service's loop may be busy for a moment
(10,000 targets' syncs, a large answer to decode): renewals do not queue behind that work, they only share
the interpreter, which switches threads every few milliseconds. A renewal that is still late because the
whole process is starved shows in ``autoscaler_leader_renew_late_seconds`` and a ``leader.renew_late``
warning long before the Lease is lost.

The leader's work stays on the service's loop. When this process starts leading, the *started* callbacks
run there as one task; when it stops leading (the Lease lost, or shutdown), that task is cancelled and
awaited, then the *stopped* callbacks are awaited there, all before the elector campaigns again or
releases the Lease — the order :class:`LeaderElector` keeps on one loop. The fence needs no hand-over:
:attr:`is_leader` reads the elector's deadline and the monotonic clock, which any thread may do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.leader import LeaderElector, StateCallback
from autoscaler.kube.leader_work import invoke

log = structlog.stdlib.get_logger(__name__)

Connect = Callable[[], Awaitable[ApiClient]]


class ElectionThread:
    """A :class:`LeaderElector` campaigning in its own thread for as long as :meth:`run` runs.

    ``connect`` makes the elector's API client; it is called (and the client closed) on the election's
    own loop. ``options`` are :class:`LeaderElector`'s (namespace, name, identity, timings,
    ``observe_renew_late``, which is then called from the election's thread)."""

    def __init__(self, connect: Connect, **options: Any) -> None:
        self._connect = connect
        self._options = options
        self.identity: str = options["identity"]
        self._started: list[StateCallback] = []
        self._stopped: list[StateCallback] = []
        self._elector: LeaderElector | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the election's loop, once it runs
        self._stop: asyncio.Event | None = None  # on the election's loop
        self._stop_requested = threading.Event()
        # Set on the caller's loop once a leader is known (this instance or another): the first campaign's
        # outcome. When it is this instance, leading_since is set first.
        self.leader_known = asyncio.Event()
        # Monotonic (the system's clock, the same in every thread): when this term of leadership began,
        # taken in the election's thread once the Lease is this instance's; None before a first term.
        self.leading_since: float | None = None

    def on_started_leading(self, callback: StateCallback) -> None:
        """Run ``callback`` on the caller's loop while leading (cancelled when leadership ends)."""
        self._started.append(callback)

    def on_stopped_leading(self, callback: StateCallback) -> None:
        """Await ``callback`` on the caller's loop when leadership ends, before the next campaign."""
        self._stopped.append(callback)

    @property
    def is_leader(self) -> bool:
        return self._elector is not None and self._elector.is_leader

    @property
    def leader_identity(self) -> str | None:
        return self._elector.leader_identity if self._elector is not None else None

    @property
    def lease_valid_until(self) -> float | None:
        return self._elector.lease_valid_until if self._elector is not None else None

    async def run(self) -> None:
        """Campaign in the election's thread until cancelled; on cancellation, step down (the leader's work
        stopped here first) and release the Lease, then return the cancellation."""
        main = asyncio.get_running_loop()
        ended: concurrent.futures.Future[None] = concurrent.futures.Future()
        thread = threading.Thread(target=self._thread, args=(main, ended), name="leader-election", daemon=True)
        thread.start()
        finished = asyncio.wrap_future(ended)
        try:
            await asyncio.shield(finished)
        except asyncio.CancelledError:
            self._request_stop()
            await finished  # stepping down needs this loop: it runs the leader's work and callbacks
            raise

    def _request_stop(self) -> None:
        self._stop_requested.set()
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the election's loop already closed
                loop.call_soon_threadsafe(stop.set)

    # ---- the election's thread ------------------------------------------------------------------

    def _thread(self, main: asyncio.AbstractEventLoop, ended: concurrent.futures.Future[None]) -> None:
        try:
            asyncio.run(self._campaign(main))
        except BaseException as exc:  # a bug: the service's run() sees it
            log.exception("leader.thread_failed")
            ended.set_exception(exc)
        else:
            ended.set_result(None)

    async def _campaign(self, main: asyncio.AbstractEventLoop) -> None:
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self._stop_requested.is_set():  # asked before this loop could be told
            return
        api = await self._connect()
        async with api:
            elector = LeaderElector(api, **self._options)
            elector.on_started_leading(lambda: self._lead_on(main))
            elector.on_stopped_leading(lambda: self._stopped_on(main))

            def leader_known(holder: str) -> None:
                if holder != self.identity:  # this instance's own term tells when it starts (_lead_on)
                    main.call_soon_threadsafe(self.leader_known.set)

            elector.on_new_leader(leader_known)
            self._elector = elector
            election = asyncio.create_task(elector.run(), name="leader-election")
            stop = asyncio.create_task(self._stop.wait())
            await asyncio.wait({election, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            election.cancel()  # steps down (through the callbacks below) and releases the Lease
            with contextlib.suppress(asyncio.CancelledError):
                await election

    async def _lead_on(self, main: asyncio.AbstractEventLoop) -> None:
        """The elector's *started* callback: the leader's work, on the service's loop, for as long as the
        elector leaves this running; cancelled there (and awaited) when it cancels this."""
        self.leading_since = time.monotonic()
        main.call_soon_threadsafe(self.leader_known.set)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        task: list[asyncio.Task[None]] = []

        def finish(_: asyncio.Task[None]) -> None:
            if not done.done():
                done.set_result(None)

        def start() -> None:
            work = main.create_task(_run_all(self._started), name="leading")
            work.add_done_callback(finish)
            task.append(work)

        main.call_soon_threadsafe(start)
        finished = asyncio.wrap_future(done)
        try:
            await asyncio.shield(finished)
        except asyncio.CancelledError:
            main.call_soon_threadsafe(lambda: [work.cancel() for work in task])
            await finished  # the elector bounds this wait (its callback timeout)
            raise

    async def _stopped_on(self, main: asyncio.AbstractEventLoop) -> None:
        """The elector's *stopped* callback: the service's, awaited on its loop (the elector bounds it)."""
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_call_each(self._stopped), main))


async def _run_all(callbacks: list[StateCallback]) -> None:
    """Run the *started* callbacks side by side until they end or are cancelled; a failure is logged."""
    await asyncio.gather(*(invoke(callback, what="started") for callback in callbacks))


async def _call_each(callbacks: list[StateCallback]) -> None:
    for callback in callbacks:
        await invoke(callback, what="stopped")
