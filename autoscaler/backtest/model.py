"""The replay's own workload: what the engine observes when its replica count is not the real one.

The replay decides its own replica count, which soon differs from what really ran. The history
holds the real pods' samples, so the simulated workload is built from them (``docs/backtest.md``,
"Modelling the simulated workload"):

* **Same count as really running**: the real pods and their samples, exactly as they were.
* **Fewer**: the real pods a ReplicaSet would keep (running before pending, ready before not,
  ready longest first, oldest first); the others are left out.
* **More**: all real pods plus added pods. An added pod takes the requests of the newest running
  real pod, starts when the replay scaled up, is Pending for ``--pod-startup`` and then Running and
  Ready (from then on, as upstream's CPU rules see it). Removed pods go newest first.
* **Load is conserved**: for each per-pod metric (each container, for resource usage), the total
  over the simulated pods equals the total the real running pods reported. Kept pods keep their
  share of it, each added pod that is running carries the real pods' average, and every value is
  scaled by the same factor: total ÷ (kept pods' values + added pods × average), rounded to the
  milli. Object and External metrics describe something outside the workload and stay as they were.
* **Requests (and limits) HVPA applied** are every simulated pod's from the next sync on (as if the
  VPA had recreated the pods at once); the others are the real pods'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TypeVar

from autoscaler.backtest.workload import RealWorkload
from autoscaler.core.observation import (
    ConditionStatus,
    ContainerInfo,
    MetricReading,
    Observation,
    PodInfo,
    PodPhase,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
    ScaleInfo,
)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class AddedPod:
    name: str
    created_at: float


def is_live(pod: PodInfo) -> bool:
    """Counts as one of the workload's replicas (not terminated, not being deleted)."""
    return not pod.deleting and pod.phase not in (PodPhase.FAILED, PodPhase.SUCCEEDED)


def keep_order(pod: PodInfo) -> tuple[bool, bool, float, float, str]:
    """Sort key: the pods a ReplicaSet scaling down keeps come first (``ActivePods`` reversed)."""
    return (
        pod.phase is not PodPhase.RUNNING,
        pod.ready is not ConditionStatus.TRUE,
        pod.ready_since if pod.ready_since is not None else math.inf,
        pod.started_at if pod.started_at is not None else math.inf,
        pod.name,
    )


class SimulatedWorkload:
    """The replay's pods from one sync to the next (added pods keep their names and start times)."""

    def __init__(self, name_prefix: str, pod_startup: float) -> None:
        self._prefix = name_prefix
        self._startup = pod_startup
        # With a start-up: when each replica the replay added (and that does not serve yet) was added, oldest
        # first; the replay's count at the previous sync; the first sync's time.
        self._starting: list[float] = []
        self._previous: int | None = None
        self._since: float | None = None
        self._added: list[AddedPod] = []
        self._created = 0
        self._template: tuple[ContainerInfo, ...] = ()
        # container → resource → milli: the per-pod requests and limits HVPA applied
        self._requests: dict[str, dict[str, int]] = {}
        self._limits: dict[str, dict[str, int]] = {}

    def pin(self, requests: Mapping[str, Mapping[str, Fraction]], limits: Mapping[str, Mapping[str, Fraction]]) -> None:
        """HVPA applied these per-pod requests and limits: the simulated pods carry them from now on."""
        for pinned, amounts_of in ((self._requests, requests), (self._limits, limits)):
            for container, amounts in amounts_of.items():
                for resource, value in amounts.items():
                    pinned.setdefault(container, {})[resource] = math.ceil(value * 1000)

    def observe(
        self, real: RealWorkload, readings: Sequence[MetricReading], replicas: int, now: float, selector: str
    ) -> Observation:
        """What the engine observes when the replay's workload has ``replicas`` replicas."""
        scale = ScaleInfo(replicas, replicas, selector)
        live = [p for p in real.pods if is_live(p)]
        running = [p for p in live if p.phase is PodPhase.RUNNING]
        if running:
            self._template = max(running, key=lambda p: (p.started_at or -math.inf, p.name)).containers
        self._resize(max(0, replicas - len(live)), now)
        starting = self._track(replicas, min(replicas, len(live)), now)
        if replicas == len(live) and not self._startup:
            return Observation(scale, self._pinned(real.pods), readings)
        keep = {p.name for p in sorted(live, key=keep_order)[:replicas]}
        added = [self._added_pod(a, now) for a in self._added]
        pods = [*(p for p in real.pods if p.name in keep or not is_live(p)), *added]
        serving = [p.name for p in added if p.phase is PodPhase.RUNNING]
        if self._startup:
            pods, keep, serving, changed = self._start_up(pods, keep, serving, starting, now)
            if replicas == len(live) and not changed:
                return Observation(scale, self._pinned(real.pods), readings)
        live_names = {p.name for p in live}
        return Observation(scale, self._pinned(pods), [rescale(r, live_names, keep, serving) for r in readings])

    def _track(self, replicas: int, at_start: int, now: float) -> int:
        """How many of the replay's replicas do not serve yet: those it added less than the start-up ago (a
        scale-down removes the newest of them first, as a ReplicaSet deletes pods not ready first). At the first
        sync the replay had ``at_start`` (the replicas beyond the real pods are being added then)."""
        if self._since is None:
            self._since = now
        previous = self._previous if self._previous is not None else at_start
        if replicas > previous:
            self._starting.extend([now] * (replicas - previous))
        elif replicas < previous:
            del self._starting[max(0, len(self._starting) - (previous - replicas)) :]
        self._previous = replicas
        self._starting = [t for t in self._starting if t + self._startup > now]
        return len(self._starting)

    def _start_up(
        self, pods: list[PodInfo], keep: set[str], serving: list[str], starting: int, now: float
    ) -> tuple[list[PodInfo], set[str], list[str], bool]:
        """With ``--pod-startup``, which of the replay's pods serve is the replay's own start-up, not the
        history's: of its live pods (in the order a ReplicaSet keeps them), the last ``starting`` are starting
        up (a real pod ready in the history is shown Pending, with no samples: it is one the replay brought back
        less than the start-up ago) and the others serve (a real pod the history shows starting — Pending, or
        not ready since it started after --from — is shown Running and Ready, carrying the average load, since
        the replay's replica it stands for started long enough ago). Real pods not ready for other reasons
        (started before --from, or ready once since) stay as they were."""
        live = sorted((p for p in pods if is_live(p)), key=keep_order)
        cut = max(0, len(live) - starting)
        to_pending = {p.name for p in live[cut:] if _serves(p)}
        to_serving = {p.name for p in live[:cut] if not _serves(p) and self._starting_in_history(p)}
        if not to_pending and not to_serving:
            return pods, keep, serving, False
        since = self._starting[-1] if self._starting else now
        settled = (self._since if self._since is not None else now) - self._startup
        changed: list[PodInfo] = []
        for pod in pods:
            if pod.name in to_pending:
                pod = replace(
                    pod, phase=PodPhase.PENDING, ready=ConditionStatus.FALSE, ready_since=since, started_at=since
                )
            elif pod.name in to_serving:
                pod = replace(
                    pod, phase=PodPhase.RUNNING, ready=ConditionStatus.TRUE, ready_since=settled, started_at=settled
                )
            changed.append(pod)
        new_keep = {name for name in keep if name not in to_pending and name not in to_serving}
        new_serving = [n for n in serving if n not in to_pending]
        # A pod shown serving carries the average load (a real one's own sample was a starting pod's).
        new_serving += sorted(n for n in to_serving if n not in new_serving)
        return changed, new_keep, new_serving, True

    def _starting_in_history(self, pod: PodInfo) -> bool:
        """The history shows ``pod`` starting up: Pending, or not ready and never ready since it started,
        having started after the replay's first sync."""
        if pod.phase is PodPhase.PENDING:
            return True
        started = pod.started_at
        never_ready = pod.ready_since is None or started is None or pod.ready_since <= started
        return (
            pod.ready is not ConditionStatus.TRUE
            and never_ready
            and started is not None
            and self._since is not None
            and started >= self._since
        )

    def _pinned(self, pods: Sequence[PodInfo]) -> Sequence[PodInfo]:
        """``pods`` with the requests and limits HVPA applied (see :meth:`pin`)."""
        if not self._requests and not self._limits:
            return pods
        return tuple(replace(pod, containers=tuple(self._pinned_container(c) for c in pod.containers)) for pod in pods)

    def _pinned_container(self, container: ContainerInfo) -> ContainerInfo:
        requests, limits = self._requests.get(container.name), self._limits.get(container.name)
        if requests is None and limits is None:
            return container
        return replace(
            container,
            requests={**container.requests, **(requests or {})},
            limits={**container.limits, **(limits or {})},
        )

    def _resize(self, count: int, now: float) -> None:
        while len(self._added) < count:
            self._created += 1
            self._added.append(AddedPod(f"{self._prefix}{self._created}", now))
        del self._added[count:]

    def _added_pod(self, pod: AddedPod, now: float) -> PodInfo:
        ready_at = pod.created_at + self._startup
        if now < ready_at:
            return PodInfo(
                name=pod.name,
                phase=PodPhase.PENDING,
                ready=ConditionStatus.FALSE,
                ready_since=pod.created_at,
                started_at=pod.created_at,
                containers=self._template,
            )
        return PodInfo(
            name=pod.name,
            phase=PodPhase.RUNNING,
            ready=ConditionStatus.TRUE,
            ready_since=ready_at,
            started_at=pod.created_at,
            containers=self._template,
        )


def _serves(pod: PodInfo) -> bool:
    return pod.phase is PodPhase.RUNNING and pod.ready is ConditionStatus.TRUE


def rescale(reading: MetricReading, live: set[str], kept: set[str], added: Sequence[str]) -> MetricReading:
    """``reading`` for the simulated pods, with each per-pod metric's total conserved."""
    if isinstance(reading, PodsReading):
        values = {name: {"": sample.value} for name, sample in reading.pods.items()}
        scaled = _scaled(values, live, kept, added)
        template = _first(reading.pods, live)
        pods = {}
        for name, containers in scaled.items():
            source = reading.pods.get(name, template)
            value = containers.get("")
            if source is not None and value is not None:
                pods[name] = Sample(value, source.timestamp, source.window)
        return PodsReading(pods)
    if isinstance(reading, ResourceReading):
        scaled = _scaled({name: dict(u.containers) for name, u in reading.pods.items()}, live, kept, added)
        usage_template = _first(reading.pods, live)
        usages = {}
        for name, containers in scaled.items():
            usage = reading.pods.get(name, usage_template)
            if usage is not None:
                usages[name] = PodUsage(containers, usage.timestamp, usage.window)
        return ResourceReading(usages)
    return reading


def _first(by_name: Mapping[str, _T], live: set[str]) -> _T | None:
    """A live pod's entry, whose time and window added pods' samples take."""
    for name in sorted(by_name):
        if name in live:
            return by_name[name]
    return None


def _scaled(
    values: Mapping[str, Mapping[str, int | None]], live: set[str], kept: set[str], added: Sequence[str]
) -> dict[str, dict[str, int | None]]:
    """Per pod and container: kept pods' values and added pods' average, scaled to conserve each
    container's total over the live pods. Pods that are not live keep their values (the engine
    ignores them); dropped pods are left out."""
    totals: dict[str, int] = {}
    counts: dict[str, int] = {}
    kept_totals: dict[str, int] = {}
    for name, containers in values.items():
        if name not in live:
            continue
        for container, value in containers.items():
            if value is None:
                continue
            totals[container] = totals.get(container, 0) + value
            counts[container] = counts.get(container, 0) + 1
            if name in kept:
                kept_totals[container] = kept_totals.get(container, 0) + value
    average = {c: Fraction(totals[c], counts[c]) for c in totals}
    factor = {}
    for container, total in totals.items():
        unscaled = kept_totals.get(container, 0) + len(added) * average[container]
        factor[container] = Fraction(total) / unscaled if unscaled else Fraction(1)
    result: dict[str, dict[str, int | None]] = {}
    for name, containers in values.items():
        if name not in live:
            result[name] = dict(containers)
        elif name in kept:
            result[name] = {c: None if v is None else _round(v * factor[c]) for c, v in containers.items()}
    for name in added:
        if average:
            result[name] = {c: _round(average[c] * factor[c]) for c in sorted(average)}
    return result


def _round(value: Fraction) -> int:
    """Half up, to the milli."""
    return math.floor(value + Fraction(1, 2))
