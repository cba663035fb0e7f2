"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's rules and local fencing.

The loop is client-go's ``tools/leaderelection`` (leaseDuration 15 s, renewDeadline 10 s, retryPeriod 2 s):
a candidate takes over only when the record it observed has not changed for the record's
leaseDurationSeconds on its *own* monotonic clock (clock skew between machines does not matter); every
write is a PUT with the resourceVersion read, so of two racing candidates one wins and the other gets
409; the leader renews every retryPeriod and releases the Lease on shutdown (``ReleaseOnCancel``).
Unlike kubernetes-asyncio's ``leaderelection`` module, :meth:`LeaderElector.run` loops for ever
(acquire → lead → lost → acquire…), releases on shutdown, and writes MicroTimes in UTC. A ``Retry-After``
is honoured by every Lease request, errors back off exponentially, and each renewal records how late it
started (``observe_renew_late``; a ``leader.renew_late`` warning past half a retry period).

**Fencing.** ``lease_valid_until`` is ``s + renew_deadline`` where ``s`` is the local monotonic time at
which the last *successful* acquire/renew request was *sent*: no one else can hold the lease before
``s + lease_duration``, and :meth:`assert_leading`, :attr:`is_leader` and :meth:`leading_scope` turn false
at ``lease_valid_until`` by reading the clock. The rules, the failure cases and the margins are written
out in docs/operations.md, "High availability".
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace

import structlog
from kubernetes_asyncio.client import ApiClient, V1Lease
from kubernetes_asyncio.client.exceptions import ApiException

from autoscaler.kube.leader_work import LeaderWork, NotLeader, StateCallback
from autoscaler.kube.lease import LeaseLock, LeaseRecord, backoff, retry_after, utc_now

__all__ = ["LeaderElector", "NotLeader", "StateCallback"]

log = structlog.stdlib.get_logger(__name__)

LeaderCallback = Callable[[str], Awaitable[None] | None]

JITTER_FACTOR = 1.2  # client-go's JitterFactor: the acquire loop waits retryPeriod × [1, 2.2)


class LeaderElector:
    """Campaign for one Lease until cancelled. Callbacks (plain functions or returning awaitables; their
    exceptions are logged, never raised): *started* ones run as tasks while this process leads, cancelled
    and awaited when leadership ends; *stopped* ones are then awaited in order; *new leader* ones receive
    the holder's identity whenever it changes (this process included). Each is bounded by
    ``callback_timeout``."""

    def __init__(
        self,
        api: ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15,
        renew_deadline: float = 10,
        retry_period: float = 2,
        clock: Callable[[], float] = time.monotonic,
        jitter_factor: float = JITTER_FACTOR,
        request_timeout: float | None = None,
        callback_timeout: float | None = None,
        observe_renew_late: Callable[[float], None] | None = None,
    ) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        if not 0 < retry_period < renew_deadline < lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration")
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.jitter_factor = jitter_factor
        # One acquire/renew attempt (a read and a write) must fit well inside the renew deadline.
        self.request_timeout = request_timeout if request_timeout is not None else renew_deadline / 2
        self._lock = LeaseLock(api, namespace, name, self.request_timeout)
        self.callback_timeout = callback_timeout if callback_timeout is not None else renew_deadline
        self._clock = clock
        self._random = random.Random()
        self._observe_renew_late = observe_renew_late
        self._failures = 0  # consecutive failed attempts (errors, not lost races)
        self._not_before = -math.inf  # our clock: no Lease request before this (the server's Retry-After)

        self._started: list[StateCallback] = []
        self._stopped: list[StateCallback] = []
        self._new_leader: list[LeaderCallback] = []

        self._lease: V1Lease | None = None  # the object last read or written: its resourceVersion
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0  # our clock, when _observed last changed
        self._reported_holder: str | None = None
        self._leading = False
        self._valid_until: float | None = None
        self._leading_event = asyncio.Event()
        self._work = LeaderWork(self.callback_timeout)
        self._running = False

    # ---- callbacks ------------------------------------------------------------------------------

    def on_started_leading(self, callback: StateCallback) -> None:
        self._started.append(callback)

    def on_stopped_leading(self, callback: StateCallback) -> None:
        self._stopped.append(callback)

    def on_new_leader(self, callback: LeaderCallback) -> None:
        self._new_leader.append(callback)

    # ---- state and fencing ----------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True while leading *and* before :attr:`lease_valid_until` (read from the clock each time). Safe to
        read from another thread: the deadline is read once."""
        until = self._valid_until
        return self._leading and until is not None and self._clock() < until

    @property
    def leader_identity(self) -> str | None:
        """The holder of the lease as last observed (``None``: no holder, or not read yet)."""
        return (self._observed.holder or None) if self._observed is not None else None

    @property
    def lease_valid_until(self) -> float | None:
        """The instant (on ``clock``) after which this process must not act as leader; ``None`` when not
        leading. Moves forward with each successful renew."""
        return self._valid_until if self._leading else None

    def assert_leading(self) -> float:
        """Raise :class:`NotLeader` unless leading with an unexpired lease; return the seconds left."""
        if not self._leading or self._valid_until is None:
            raise NotLeader(f"{self.identity} is not the leader of lease {self.namespace}/{self.name}")
        remaining = self._valid_until - self._clock()
        if remaining <= 0:
            raise NotLeader(
                f"{self.identity} could not renew lease {self.namespace}/{self.name} within {self.renew_deadline:g}s"
            )
        return remaining

    @asynccontextmanager
    async def leading_scope(self) -> AsyncIterator[float]:
        """Run a block of leader-only work: checked on entry (:class:`NotLeader`), and cancelled when the
        lease runs out or leadership ends while it runs, surfacing as :class:`NotLeader`. The deadline
        follows renewals. Yields the seconds left at entry (a sensible cap for request timeouts).
        On step-down the elector waits for every scope to exit before calling *stopped* callbacks and
        before releasing the lease."""
        async with self._work.scope(self.assert_leading(), f"{self.namespace}/{self.name}") as remaining:
            yield remaining

    async def wait_until_leading(self) -> None:
        if not self.is_leader:
            await self._leading_event.wait()

    # ---- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Campaign, lead, and campaign again after losing the lease, until cancelled. On cancellation
        while leading: stop leading (fence, cancel leader work, *stopped* callbacks), then release."""
        if self._running:
            raise RuntimeError("LeaderElector.run() is already running")
        self._running = True
        log.info("leader.campaign", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        try:
            while True:
                await self._acquire()
                await self._lead()
        finally:
            self._running = False

    async def _acquire(self) -> None:
        while True:
            acquired = await self._attempt(self.request_timeout)
            await self._report_new_leader()
            if acquired:
                return
            base = self._backoff(self.lease_duration)
            await asyncio.sleep(
                max(base + self._random.uniform(0, base * self.jitter_factor), self._not_before - self._clock())
            )

    def _backoff(self, cap: float) -> float:
        return backoff(self._failures, self.retry_period, cap)

    async def _lead(self) -> None:
        self._start_leading()
        try:
            reason = await self._renew_until_lost()
        except BaseException:  # cancelled (shutdown), or a bug: either way stop first, then give the lease up
            await self._stop_leading("shutdown")
            await self._release()
            raise
        await self._stop_leading(reason)

    async def _renew_until_lost(self) -> str:
        while True:
            assert self._valid_until is not None
            left = self._valid_until - self._clock()
            if left <= 0:
                return "renew deadline passed"
            pause = min(max(self._backoff(self.renew_deadline), self._not_before - self._clock()), left)
            planned = self._clock() + pause
            await asyncio.sleep(pause)
            started = self._clock()
            left = self._valid_until - started
            self._renewal_started(started - planned, left)
            if left <= 0:
                return "renew deadline passed"
            renewed = await self._attempt(min(self.request_timeout, left), renewing=True)
            await self._report_new_leader()
            if not renewed and self._observed is not None and self._observed.holder not in ("", self.identity):
                return f"lease taken by {self._observed.holder}"

    # ---- one attempt ----------------------------------------------------------------------------

    async def _attempt(self, budget: float, *, renewing: bool = False) -> bool:
        """One round of client-go's ``tryAcquireOrRenew``; True when this process holds the lease after it."""
        wait = self._not_before - self._clock()
        if wait > 0:  # e.g. the first attempt of a candidate that just lost the lease to a 429
            await asyncio.sleep(wait)
        try:
            outcome = await self._attempt_once(budget, renewing)
        except Exception as exc:  # ApiException, timeouts, aiohttp.ClientError…: retried after a backoff
            return self._failed(exc, renewing)
        self._failures = 0
        return outcome

    async def _attempt_once(self, budget: float, renewing: bool) -> bool:
        async with asyncio.timeout(budget):
            if (
                renewing
                and self._lease is not None
                and self._observed is not None
                and self._observed.holder == self.identity
            ):
                # Fast path: overwrite what we wrote last (one request); a 409 means someone else wrote.
                try:
                    await self._write(self._lease, replace(self._observed, renew_time=utc_now()))
                    return True
                except ApiException as exc:
                    if exc.status != 409:
                        raise
            return await self._acquire_or_renew()

    def _renewal_started(self, late: float, left: float) -> None:
        late = max(0.0, late)
        if self._observe_renew_late is not None:
            self._observe_renew_late(late)
        if late >= self.retry_period / 2:
            log.warning(
                "leader.renew_late",
                lease=f"{self.namespace}/{self.name}",
                identity=self.identity,
                late_seconds=round(late, 3),
                lease_left_seconds=round(max(0.0, left), 3),
                renew_deadline_seconds=self.renew_deadline,
            )

    def _failed(self, exc: BaseException, renewing: bool) -> bool:
        status = getattr(exc, "status", None)
        self._failures += 1
        wait = retry_after(exc)
        if wait is not None:
            self._not_before = self._clock() + wait
        log.warning(
            "leader.renew_failed" if renewing else "leader.acquire_failed",
            lease=f"{self.namespace}/{self.name}",
            identity=self.identity,
            error=type(exc).__name__,
            status=status,
            failures=self._failures,
            retry_after=wait,
        )
        return False

    async def _acquire_or_renew(self) -> bool:
        now = utc_now()
        try:
            lease = await self._lock.read()
        except ApiException as exc:
            if exc.status != 404:
                raise
            record = LeaseRecord(self.identity, self._duration_seconds(), now, now, 0)
            try:
                await self._write(None, record)
            except ApiException as conflict:
                if conflict.status == 409:  # someone created it first
                    return False
                raise
            return True
        self._lease = lease
        old = self._observe(LeaseRecord.of(lease))
        if old.holder and old.holder != self.identity and not self._expired(old):
            return False
        if old.holder == self.identity:
            record = replace(old, duration=self._duration_seconds(), renew_time=now)
        else:
            record = LeaseRecord(self.identity, self._duration_seconds(), now, now, old.transitions + 1)
        try:
            await self._write(lease, record)
        except ApiException as exc:
            if exc.status == 409:  # lost a race with another candidate (or the holder renewed)
                return False
            raise
        return True

    async def _write(self, base: V1Lease | None, record: LeaseRecord) -> None:
        """Create (``base`` None) or replace with ``base``'s resourceVersion; on success the lease is ours
        until ``sent + renew_deadline``, ``sent`` being taken *before* the request leaves."""
        sent = self._clock()
        written = await self._lock.write(base, record)
        self._lease = written
        self._observe(LeaseRecord.of(written))
        if record.holder == self.identity:
            self._valid_until = sent + self.renew_deadline
            self._extend_scopes()

    def _observe(self, record: LeaseRecord) -> LeaseRecord:
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock()
        return record

    def _expired(self, record: LeaseRecord) -> bool:
        duration = record.duration if record.duration > 0 else self.lease_duration
        return self._clock() >= self._observed_at + duration

    def _duration_seconds(self) -> int:
        return max(1, math.ceil(self.lease_duration))

    # ---- leading and stepping down --------------------------------------------------------------

    def _start_leading(self) -> None:
        self._leading = True
        self._leading_event.set()
        log.info(
            "leader.started",
            lease=f"{self.namespace}/{self.name}",
            identity=self.identity,
            transitions=self._observed.transitions if self._observed else None,
        )
        self._work.start(self._started)

    async def _stop_leading(self, reason: str) -> None:
        # The fence closes first, synchronously: nothing below can be interleaved with a new write.
        self._leading = False
        self._valid_until = None
        self._leading_event.clear()
        (log.info if reason == "shutdown" else log.warning)(
            "leader.stopped", lease=f"{self.namespace}/{self.name}", identity=self.identity, reason=reason
        )
        await self._work.stop()
        for callback in self._stopped:
            await self._work.call(callback)

    async def _release(self) -> None:
        """client-go ``ReleaseOnCancel``: give the lease up so a standby need not wait for it to expire. A
        renewal the shutdown cut short may have been written all the same, leaving this copy a version
        behind (a 409): the Lease is read again and released if it is still this holder's."""
        if self._lease is None or self._observed is None or self._observed.holder != self.identity:
            return
        now, lease = utc_now(), f"{self.namespace}/{self.name}"
        record = LeaseRecord("", 1, now, now, self._observed.transitions)
        try:
            async with asyncio.timeout(self.request_timeout):
                try:
                    await self._write(self._lease, record)
                except ApiException as exc:
                    found = LeaseRecord.of(current := await self._lock.read()) if exc.status == 409 else None
                    if found is None or found.holder != self.identity:
                        raise
                    await self._write(current, replace(record, transitions=found.transitions))
            log.info("leader.released", lease=lease, identity=self.identity)
        except Exception as exc:  # the lease simply expires instead (or is another holder's now: status 409)
            log.warning(
                "leader.release_failed", lease=lease, error=type(exc).__name__, status=getattr(exc, "status", None)
            )

    def _extend_scopes(self) -> None:
        if self._valid_until is not None and self._leading:
            self._work.extend(self._valid_until - self._clock())

    async def _report_new_leader(self) -> None:
        holder = self.leader_identity
        if holder is None or holder == self._reported_holder:
            return
        self._reported_holder = holder
        log.info(
            "leader.observed",
            lease=f"{self.namespace}/{self.name}",
            holder=holder,
            transitions=self._observed.transitions if self._observed else None,
        )
        for callback in self._new_leader:
            await self._work.call(callback, holder)
