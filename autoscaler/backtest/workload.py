"""The real workload over time, from kube-state-metrics: its pods, their state and requests, its replicas.

The service lists a target's pods from the cluster; a backtest can only ask Prometheus what
kube-state-metrics reported. Every query is evaluated over the grid like the metric queries, and a
series that is absent leads to the documented assumption (``docs/backtest.md``): no phase → Running,
no readiness → Ready, no start time → started long ago, no requests → none known (Utilization
metrics then fail as upstream fails them), no replicas → no cost comparison.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autoscaler.backtest.history import HistoryClient
from autoscaler.core.observation import ConditionStatus, ContainerInfo, PodInfo, PodPhase
from autoscaler.core.spec import CrossVersionObjectReference
from autoscaler.prometheus.promql import sanitize_label_name, string_literal
from autoscaler.prometheus.sample_values import milli_or_none

# The start time assumed when kube-state-metrics does not say: long before any history (a fixed
# time, so that the pod's age is consistent from one sync to the next).
LONG_AGO = -10_000_000_000.0

# Where kube-state-metrics reports a workload's replicas: kind → (status, spec, label of the name).
REPLICA_SERIES: Mapping[str, tuple[str, str, str]] = {
    "Deployment": ("kube_deployment_status_replicas", "kube_deployment_spec_replicas", "deployment"),
    "StatefulSet": ("kube_statefulset_status_replicas", "kube_statefulset_replicas", "statefulset"),
    "ReplicaSet": ("kube_replicaset_status_replicas", "kube_replicaset_spec_replicas", "replicaset"),
}
_READY = {"true": ConditionStatus.TRUE, "false": ConditionStatus.FALSE, "unknown": ConditionStatus.UNKNOWN}
_PHASES = {p.value: p for p in PodPhase}


@dataclass(frozen=True, slots=True)
class WorkloadQueries:
    """The PromQL of each kube-state-metrics fact, for one workload."""

    pods: str  # one series per pod the workload owns (label ``pod``)
    phase: str
    ready: str
    ready_time: str
    start_time: str
    deletion: str
    requests: str
    status_replicas: str | None
    spec_replicas: str | None

    def texts(self) -> dict[str, str]:
        """Every query, by itself (each is sent as it is)."""
        texts = [
            self.pods,
            self.phase,
            self.ready,
            self.ready_time,
            self.start_time,
            self.deletion,
            self.requests,
            self.status_replicas,
            self.spec_replicas,
        ]
        return {text: text for text in texts if text is not None}


def owned_pods_query(namespace: str, ref: CrossVersionObjectReference) -> str:
    """Pods the workload owns: directly (StatefulSet, ReplicaSet, …) or through a ReplicaSet it owns
    (Deployment, or any kind that manages ReplicaSets), one series per pod with the ``pod`` label."""
    ns, kind, name = string_literal(namespace), string_literal(ref.kind), string_literal(ref.name)
    direct = f"kube_pod_owner{{namespace={ns}, owner_kind={kind}, owner_name={name}}}"
    replica_sets = (
        f"max by (namespace, owner_name) (label_replace(kube_replicaset_owner{{namespace={ns}, "
        f'owner_kind={kind}, owner_name={name}}}, "owner_name", "$1", "replicaset", "(.+)"))'
    )
    via_replica_set = (
        f'kube_pod_owner{{namespace={ns}, owner_kind="ReplicaSet"}} '
        f"* on (namespace, owner_name) group_left () {replica_sets}"
    )
    return f"max by (pod) ({direct} or {via_replica_set})"


def workload_queries(
    namespace: str,
    ref: CrossVersionObjectReference,
    *,
    pods_query: str | None = None,
    replicas_query: str | None = None,
) -> WorkloadQueries:
    pods = f"max by (pod) ({pods_query})" if pods_query else owned_pods_query(namespace, ref)
    ns = string_literal(namespace)

    def of_pods(expression: str) -> str:
        # Only the workload's own pods, at each time: a namespace can hold thousands of others.
        return f"{expression} and on (pod) {pods}"

    status = spec = None
    if replicas_query:
        status = replicas_query
    elif ref.kind in REPLICA_SERIES:
        status_metric, spec_metric, label = REPLICA_SERIES[ref.kind]
        match = f"namespace={ns}, {label}={string_literal(ref.name)}"
        status, spec = f"max({status_metric}{{{match}}})", f"max({spec_metric}{{{match}}})"
    return WorkloadQueries(
        pods=pods,
        phase=of_pods(f"max by (pod, phase) (kube_pod_status_phase{{namespace={ns}}} == 1)"),
        ready=of_pods(f"max by (pod, condition) (kube_pod_status_ready{{namespace={ns}}} == 1)"),
        ready_time=of_pods(f"max by (pod) (kube_pod_status_ready_time{{namespace={ns}}})"),
        start_time=of_pods(f"max by (pod) (kube_pod_start_time{{namespace={ns}}})"),
        deletion=of_pods(f"max by (pod) (kube_pod_deletion_timestamp{{namespace={ns}}} > 0)"),
        requests=of_pods(f"max by (pod, container, resource) (kube_pod_container_resource_requests{{namespace={ns}}})"),
        status_replicas=status,
        spec_replicas=spec,
    )


def restrict_to_pods(query: str, pods: str, pod_label: str) -> str:
    """``query`` keeping only series of the pods ``pods`` lists at each time (server-side, so that a
    namespace-wide per-pod query fetches only this workload's series)."""
    if pod_label != "pod":
        pods = f'label_replace({pods}, {string_literal(pod_label)}, "$1", "pod", "(.*)")'
    return f"({query}) and on ({pod_label}) ({pods})"


@dataclass(frozen=True, slots=True)
class RealWorkload:
    """The workload as it really was at one sync."""

    pods: tuple[PodInfo, ...]
    replicas: int | None  # status.replicas; None when Prometheus does not have it
    spec_replicas: int | None


class WorkloadHistory:
    """Builds :class:`RealWorkload` at each sync from the fetched series; remembers readiness
    transitions (for ``readySince``) and which facts were missing (for the report's notes)."""

    def __init__(self, queries: WorkloadQueries, resources: Sequence[str], workload: str) -> None:
        self.queries = queries
        self.workload = workload
        # kube-state-metrics spells resource names as label values (nvidia.com/gpu → nvidia_com_gpu).
        self._resources = {sanitize_label_name(r).lstrip("_") or r: r for r in ("cpu", "memory", *resources)}
        self._ready: dict[str, tuple[ConditionStatus, float]] = {}
        self.syncs = 0
        self.syncs_without_pods = 0
        self.pod_syncs = 0
        self.missing: Counter[str] = Counter()  # fact → pod-syncs (or syncs, for replicas) without it

    def pod_names(self, history: HistoryClient, t_ms: int) -> list[str]:
        return sorted({s.labels["pod"] for s in history.vector(self.queries.pods, t_ms) if "pod" in s.labels})

    def at(
        self, history: HistoryClient, t_ms: int, names: Sequence[str], usage_containers: Mapping[str, set[str]]
    ) -> RealWorkload:
        now = t_ms / 1000
        q = self.queries
        phases = _by_pod(history, q.phase, t_ms, "phase")
        ready = _by_pod(history, q.ready, t_ms, "condition")
        ready_time = _by_pod(history, q.ready_time, t_ms)
        started = _by_pod(history, q.start_time, t_ms)
        deleting = _by_pod(history, q.deletion, t_ms)
        requests: dict[str, dict[str, dict[str, int]]] = {}
        for series in history.vector(q.requests, t_ms):
            pod, container = series.labels.get("pod"), series.labels.get("container")
            resource = self._resources.get(series.labels.get("resource", ""))
            value = milli_or_none(series.value)
            if pod and container and resource and value is not None:
                requests.setdefault(pod, {}).setdefault(container, {})[resource] = value
        pods = []
        for name in names:
            start = _number(started.get(name))
            started_at = start if start is not None else LONG_AGO
            status = _READY.get(ready.get(name, ""), ConditionStatus.TRUE)
            became_ready = _number(ready_time.get(name))
            pods.append(
                PodInfo(
                    name=name,
                    phase=_PHASES.get(phases.get(name, ""), PodPhase.RUNNING),
                    ready=status,
                    ready_since=self._ready_since(name, status, became_ready, started_at, now),
                    started_at=started_at,
                    deleting=name in deleting,
                    containers=_containers(requests.get(name, {}), usage_containers.get(name, set())),
                )
            )
            self._count_missing(name, phases, ready, started, requests)
        self._ready = {name: self._ready[name] for name in names}
        self.syncs += 1
        if not names:
            self.syncs_without_pods += 1
        replicas = _integer(history, q.status_replicas, t_ms)
        if q.status_replicas is None or replicas is None:
            self.missing["replicas"] += 1
        return RealWorkload(tuple(pods), replicas, _integer(history, q.spec_replicas, t_ms))

    def _ready_since(
        self, name: str, status: ConditionStatus, became_ready: float | None, started_at: float, now: float
    ) -> float:
        """The Ready condition's lastTransitionTime: kube-state-metrics' ready time when it has one;
        otherwise the sync at which a change was first seen, or the start time if never seen changing."""
        previous = self._ready.get(name)
        if previous is None:
            since = started_at
        elif previous[0] is not status:
            since = now
        else:
            since = previous[1]
        self._ready[name] = (status, since)
        if status is ConditionStatus.TRUE and became_ready is not None:
            return became_ready
        return since

    def _count_missing(
        self,
        name: str,
        phases: Mapping[str, str],
        ready: Mapping[str, str],
        started: Mapping[str, str],
        requests: Mapping[str, object],
    ) -> None:
        self.pod_syncs += 1
        for fact, values in (("phase", phases), ("ready", ready), ("start", started), ("requests", requests)):
            if name not in values:
                self.missing[fact] += 1

    def notes(self, kind_and_name: str, replicas_hint: str = "see --replicas-query") -> list[str]:
        """What was missing, and what was assumed instead (``replicas_hint``: what to do when the replicas
        have no series, in the running command's words)."""
        notes = []
        if self.syncs and self.syncs_without_pods == self.syncs:
            notes.append(
                f"no pods of {kind_and_name} were found at any sync (kube_pod_owner, kube_replicaset_owner): "
                "per-pod metrics had nothing to read; is kube-state-metrics scraped with its own "
                "namespace and pod labels (honor_labels: true)?"
            )
        elif self.syncs_without_pods:
            notes.append(f"{kind_and_name} had no pods at {self.syncs_without_pods} of {self.syncs} syncs")
        assumed = {
            "phase": "kube_pod_status_phase: absent, pods assumed Running",
            "ready": "kube_pod_status_ready: absent, pods assumed Ready",
            "start": "kube_pod_start_time: absent, pods assumed started long before (CPU initialization over)",
            "requests": "kube_pod_container_resource_requests: absent, requests unknown (Utilization metrics "
            "cannot be computed there)",
        }
        for fact, text in assumed.items():
            if self.missing[fact]:
                notes.append(f"{text} for {self.missing[fact]} of {self.pod_syncs} pod-syncs")
        if self.missing["replicas"]:
            what = (
                self.queries.status_replicas
                or f"the workload's replicas (no kube-state-metrics series for this kind; {replicas_hint})"
            )
            scope = (
                "at any sync"
                if self.missing["replicas"] == self.syncs
                else f"at {self.missing['replicas']} of {self.syncs} syncs"
            )
            notes.append(f"{what}: absent {scope}; the cost comparison covers only the syncs where it is known")
        return notes


def _by_pod(history: HistoryClient, query: str, t_ms: int, label: str | None = None) -> dict[str, str]:
    """pod → the value of ``label`` (or the sample's value) in ``query``'s vector at ``t_ms``."""
    result: dict[str, str] = {}
    for series in history.vector(query, t_ms):
        pod = series.labels.get("pod")
        if pod is not None:
            value = series.labels.get(label, "") if label else series.value
            # Deterministic when an old and a new value overlap (two kube-state-metrics replicas).
            if pod not in result or value < result[pod]:
                result[pod] = value
    return result


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _integer(history: HistoryClient, query: str | None, t_ms: int) -> int | None:
    if query is None:
        return None
    values = [_number(s.value) for s in history.vector(query, t_ms)]
    known = [v for v in values if v is not None]
    return round(max(known)) if known else None


def _containers(requests: Mapping[str, Mapping[str, int]], reported: set[str]) -> tuple[ContainerInfo, ...]:
    """The pod's containers: those with requests, and those that report usage without any (which
    upstream reports as a missing request)."""
    names = sorted(set(requests) | {c for c in reported if c})
    return tuple(ContainerInfo(name, dict(requests.get(name, {}))) for name in names)
