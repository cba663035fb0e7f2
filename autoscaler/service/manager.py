"""The manager: one reconciler per valid target, started, restarted and stopped as targets change.

Targets come from the ScalingTarget CRD (watched cluster-wide or in the listed namespaces, only those of this
instance's shard: :mod:`autoscaler.service.cluster.sharding`) or from a file (standalone). A target added, changed or
deleted starts, restarts or stops its reconciler at once (the first sync of a new target follows within a second; of
one that arrives with a status, as a target moved from another shard does, after a period). An invalid target gets a
condition and an Event listing every problem, and no reconciler; the others go on.

That lifecycle is all the manager does. What the reconcilers read is :mod:`autoscaler.service.sync.view`,
what they write :mod:`autoscaler.service.sync.writes`; :mod:`autoscaler.service.wiring` builds both (and the
watch caches they stand on, :mod:`autoscaler.service.cluster.caches`), and the manager hands them to every
reconciler.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from autoscaler.kube.api import KubeError
from autoscaler.kube.watch import Key
from autoscaler.service.cluster.takeover import statuses_at_takeover
from autoscaler.service.cluster.targets import Target, error_text
from autoscaler.service.sync.reconciler import TargetReconciler
from autoscaler.service.sync.status import invalid_status

if TYPE_CHECKING:
    from autoscaler.service.wiring import SyncParts

log = structlog.get_logger("autoscaler.manager")

STARTS_PER_TURN = 100  # reconcilers started per turn of the loop when this instance starts leading


@dataclass
class Running:
    """A target with a running reconciler."""

    target: Target
    reconciler: TargetReconciler
    task: asyncio.Task[None]


class Manager:
    def __init__(
        self,
        parts: SyncParts,
        *,
        static_targets: list[Target] | None = None,
        on_targets: Callable[[int, int], None] | None = None,
    ) -> None:
        """``parts``: what the reconcilers stand on (service/wiring.py builds them); the manager starts and
        stops its caches and closes its batcher. ``static_targets``: targets from a file (then the caches
        hold none). ``on_targets``: told (active, invalid) whenever the set of targets changes."""
        self.api = parts.kube
        self.cluster = parts.cluster
        self.namespaces = parts.cluster.namespaces
        self.sharding = parts.cluster.sharding
        self.static = static_targets is not None
        self.batcher = parts.batcher
        self.pods = parts.pods
        self.view = parts.view
        self.writer = parts.writer
        self.context = parts.context
        if not self.static:
            self.cluster.listen_to_targets(self._target_event)
        self.running: dict[Key, Running] = {}
        self.invalid: dict[Key, Target] = {}
        # Invalid targets whose condition and Event this term has written (a term that could not write them,
        # its leadership lost or the write failed, leaves them for the next event or term to report).
        self._reported_invalid: set[Key] = set()
        # The last status of targets without a running reconciler, for /api/targets only: a new term
        # restores from the server, never from here (an older term's memory, see activate).
        self.statuses: dict[Key, Mapping[str, Any]] = {}
        self._targets: dict[Key, Target] = {t.key: t for t in static_targets or []}
        self._tasks: list[asyncio.Task[None]] = []
        self._active = False
        self._changes: asyncio.Queue[Key] = asyncio.Queue()
        # Targets whose reconciler runs and that left this instance's watch since (deleted, or labelled for
        # another shard): stopped when the change is handled, even if the target is back by then.
        self._left: set[Key] = set()
        self._on_targets = on_targets

    # -- the caches the targets come from: started here, stopped with the manager -----------------------

    async def start_caches(self) -> None:
        await self.cluster.start()

    async def wait_synced(self) -> None:
        await self.cluster.wait_synced()

    def unsynced(self) -> int:
        """How many running reconcilers have not decided a sync yet."""
        return sum(1 for running in self.running.values() if running.reconciler.syncs == 0)

    # -- lifecycle ----------------------------------------------------------------------------------

    async def activate(self, leading_since: float | None = None) -> None:
        """Start reconciling every known target (on becoming leader, or at once without election).

        Each reconciler starts from the target's status as it is on the API server *now*, read with one
        LIST (paged) per watched scope: the cache may lag (a watch relisting after a partition, events
        still buffered after a pause), and this instance's memory of an earlier term is older than what
        the leaders since then wrote (D3). A failed read is retried with backoff; no target is
        reconciled from older state meanwhile (:mod:`autoscaler.service.cluster.takeover`).

        ``leading_since`` (monotonic): when this instance began to lead. Target caches that listed after it
        and follow the API server hold every status written before it, and only this instance writes them
        since: their statuses are current (a cold start, or no election; docs/benchmarks-history.md, "The first
        pass: the harness's own share, the first syncs' report, the takeover read")."""
        await self.wait_synced()
        if self._active:
            return
        if leading_since is not None and self.cluster.targets_listed_after(leading_since):
            log.info("takeover: the target caches listed after this instance began to lead, no read again")
            statuses: dict[Key, Target] = {}
        elif self.static:  # targets from a file have no status on the server: a new term starts as upstream's
            statuses = {}
        else:
            statuses = await statuses_at_takeover(self.api, self.namespaces, self.sharding, self._targets)
        self._active = True
        for index, key in enumerate(list(self._targets)):
            target = self._targets.get(key)
            if target is None:  # deleted while an earlier start gave the loop its turn
                continue
            fresh = statuses.get(key)
            await self._apply_target(
                target, at_startup=True, server_status=fresh.status if fresh is not None else target.status
            )
            if index % STARTS_PER_TURN == STARTS_PER_TURN - 1:
                # Starting a reconciler never waits for anything: 10,000 of them held the loop for
                # seconds in one go (its probes, its watches, the first syncs' answers).
                await asyncio.sleep(0)
        self._report_counts()
        log.info("reconcilers started", targets=len(self.running), invalid=len(self.invalid))
        self._tasks.append(asyncio.create_task(self._process_changes(), name="target changes"))

    async def deactivate(self, *, shutting_down: bool = False) -> None:
        """Stop every reconciler now (leadership lost or shutting down), all in one go; caches keep running."""
        self._active = False
        self._left.clear()
        self._reported_invalid.clear()  # a new term reports them again: the last term's writes may not have landed
        changes, self._tasks = self._tasks, []  # this term's: the next starts its own (two would race on a target)
        # Their last statuses are kept for /api/targets, but not at shutdown: 10,000 parsed for no one.
        ours = [*self.running, *self.invalid]
        await self._stop(*self.running, keep_statuses=not shutting_down, tasks=changes)
        # A standby decides nothing: its targets' series would stand still and age (the oldest-sync age
        # alerts), and count in every instance's aggregates. The next leader exports its own.
        self._forget(*ours)

    async def stop(self) -> None:
        await self.deactivate(shutting_down=True)
        await self.cluster.stop()
        await self.batcher.close()

    # -- targets ------------------------------------------------------------------------------------

    def _target_event(self, key: Key, old: Target | None, new: Target | None) -> None:
        if new is None:
            self._targets.pop(key, None)
            if key in self.running:
                self._left.add(key)
        else:
            self._targets[key] = new
        self._changes.put_nowait(key)

    async def _process_changes(self) -> None:
        while True:
            key = await self._changes.get()
            if not self._active:
                continue
            target = self._targets.get(key)
            if key in self._left:
                # Its writes stopped when it left (each is fenced on the target cache); a target back since
                # starts afresh from the status on the server, which another shard may have written.
                self._left.discard(key)
                await self._stop(key)
                self._forget(key)  # another instance's now (or deleted); back here, it starts anew
            if target is None:
                await self._stop(key)
                self._forget(key)
                self.invalid.pop(key, None)
                self._reported_invalid.discard(key)
                self.statuses.pop(key, None)
                log.info(
                    "target gone: reconciler stopped",
                    namespace=key[0],
                    name=key[1],
                    why="deleted, or its labels no longer select it for " + self.sharding.description,
                )
            else:
                await self._apply_target(target, at_startup=False)
            self._report_counts()

    def _forget(self, *keys: Key) -> None:
        """Remove these targets' series from /metrics (their reconcilers have stopped: none sets them again)."""
        for namespace, name in keys:
            self.context.reports.metrics.forget_target(namespace, name)

    def _report_counts(self) -> None:
        if self._on_targets is not None:
            self._on_targets(len(self.running), len(self.invalid))

    async def _apply_target(
        self, target: Target, *, at_startup: bool, server_status: Mapping[str, Any] | None = None
    ) -> None:
        """Start, restart or update ``target``'s reconciler. A restart (spec changed) keeps this term's
        state; a start restores it from ``server_status`` (read at takeover) or the status the cache
        has, which follows every status write (never from this instance's memory of an older term)."""
        key = target.key
        running = self.running.get(key)
        if running is not None and running.target.same_spec(target):
            running.target = target
            running.reconciler.retarget(target)
            return
        state = last_status = None
        if running is not None:
            await self._stop(key)  # first: a sync caught writing a scale finishes it (reconciler.py)
            handoff = running.reconciler.handoff()
            state, last_status = handoff.state, handoff.last_status
        if not self._active:  # deactivated meanwhile (leadership lost, shutdown): no reconciler may start
            return
        if not target.valid:
            await self._report_invalid(target)
            return
        self.invalid.pop(key, None)
        self._reported_invalid.discard(key)
        if last_status is None:
            last_status = server_status if server_status is not None else target.status
        reconciler = TargetReconciler(
            target, self.view, self.writer, self.context, state=state, last_status=last_status
        )
        # A new target arriving with a status was served before (maybe by another shard: docs/sharding.md).
        served_before = running is None and not at_startup and bool(target.status)
        delay = self.context.first_delay(at_startup=at_startup, served_before=served_before)
        task = asyncio.create_task(reconciler.run(delay), name=f"reconcile {key[0]}/{key[1]}")
        self.running[key] = Running(target, reconciler, task)
        # At takeover one line says how many started (activate): a line each was 10,000 lines at 10,000 targets.
        (log.debug if at_startup and running is None else log.info)(
            "reconciler started" if running is None else "reconciler restarted: spec changed",
            namespace=key[0],
            name=key[1],
        )

    async def _stop(self, *keys: Key, keep_statuses: bool = True, tasks: Iterable[asyncio.Task[None]] = ()) -> None:
        """Stop these reconcilers (and ``tasks``), each cancelled before any is awaited (one by one took seconds
        at 10,000 targets: docs/benchmarks-history.md, "Shutdown at scale, and where the CPU goes now")."""
        stopping = [(key, running) for key in keys if (running := self.running.pop(key, None)) is not None]
        tasks = [*tasks, *(running.task for _, running in stopping)]
        for key, _ in stopping:
            self.view.forget(key)  # before the task stops: a sync of another target meanwhile must not see it
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for key, running in stopping if keep_statuses else ():
            last_status = running.reconciler.last_status
            if last_status is not None:
                self.statuses[key] = last_status

    async def _report_invalid(self, target: Target) -> None:
        self._forget(target.key)  # no reconciler (any was stopped): the series of its last decision would age
        previous = self.invalid.get(target.key)
        self.invalid[target.key] = target
        same = previous is not None and (previous.errors, previous.generation) == (target.errors, target.generation)
        if same and target.key in self._reported_invalid:
            return  # reported already (our own status write comes back as a change)
        log.warning(
            "invalid target: skipped",
            namespace=target.namespace,
            name=target.name,
            errors=[str(e) for e in target.errors],
        )
        if not self.writer.may_write() or self.writer.target_problem(target) is not None:
            return
        await self.writer.record_event(target, "Warning", "InvalidSpec", error_text(target.errors))
        document = invalid_status(target, time.time(), target.status)
        document.pop("shard", None)  # the shard that wrote the status before may not be this one
        if self.sharding.shard is not None:
            document["shard"] = self.sharding.shard
        self.statuses[target.key] = document
        try:
            await self.writer.write_status(target, document, target.status)
        except KubeError as exc:
            log.warning("could not write status", namespace=target.namespace, name=target.name, error=str(exc))
        else:
            self._reported_invalid.add(target.key)

    # -- introspection ------------------------------------------------------------------------------

    def status_keys(self, namespace: str | None = None) -> list[Key]:
        """The targets that may have a status here (running, or stopped with one kept), for /api/targets."""
        return [k for k in self.running.keys() | self.statuses.keys() if namespace is None or k[0] == namespace]

    def status_of(self, key: Key) -> Mapping[str, Any] | None:
        """A target's latest status (parsed from its reconciler's copy now), for /api/targets and explain."""
        status = running.reconciler.last_status if (running := self.running.get(key)) is not None else None
        return status if status is not None else self.statuses.get(key)
