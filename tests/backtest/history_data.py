"""Known histories for the backtest tests, written as promtool backfill and as the equivalent
``simulate`` scenario built from the same numbers.

``shop/web`` is a Deployment whose real pod count always followed the decisions of ``WEB_SPEC``
(the history is generated sync by sync with ``simulate``), so replaying ``WEB_SPEC`` over it must
reproduce the scenario exactly: new pods go Pending → Running unready → Ready, a removed pod shows
one sync with a deletion timestamp, one pod misses its rps samples for a while. ``shop/other``
is another Deployment in the same namespace (its series must never leak in). ``bare/lean`` has
only ownership and usage series: no phase, readiness, start time, requests or replicas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler_sandbox.history import OpenMetricsHistory as Backfill

T0 = 1_700_000_000.0
STEP = 15
SYNCS = 40
NAMESPACE = "shop"
REQUEST_MILLI = 500
FAR_START = T0 - 100_000  # the initial pods' start time

CPU_QUERY = "sum by (namespace, pod, container) (app_cpu_usage_cores{<<scope>>})"
RPS_QUERY = "sum by (namespace, pod) (http_rps{<<scope>>})"

WEB_SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "minReplicas": 2,
    "maxReplicas": 12,
    "metrics": [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50},
                "query": CPU_QUERY,
            },
        },
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "rps"},
                "target": {"type": "AverageValue", "averageValue": "10"},
                "query": RPS_QUERY,
            },
        },
    ],
    "behavior": {
        "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 30}]},
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}],
        },
    },
}

# Total load of the workload per sync: CPU in millicores, requests per second in milli.
CPU_LOAD = [600] * 4 + [1200, 1800, 2400, 3000] + [3000] * 12 + [800] * 20
RPS_LOAD = [20_000] * 4 + [40_000, 60_000, 80_000, 100_000] + [100_000] * 12 + [25_000] * 20
RPS_GAP = range(10, 13)  # syncs at which web-2 reports no rps (a missing pod)


@dataclass(frozen=True)
class Pod:
    name: str
    started: float
    created_sync: int  # -1 for the initial pods

    def phase(self, k: int) -> str:
        return "Pending" if k == self.created_sync else "Running"

    def ready(self, k: int) -> bool:
        return self.created_sync < 0 or k >= self.created_sync + 2

    def ready_since(self, k: int) -> float:
        # What kube-state-metrics readiness series let the backtest infer (docs/backtest.md).
        if self.created_sync < 0:
            return self.started
        return T0 + STEP * (self.created_sync + 2) if self.ready(k) else self.started


@dataclass
class Sync:
    at: float
    pods: list[Pod]
    deleting: set[str] = field(default_factory=set)  # pods shown with a deletion timestamp
    cpu: dict[str, int] = field(default_factory=dict)  # pod → millicores
    rps: dict[str, int] = field(default_factory=dict)  # pod → milli

    def live(self) -> list[Pod]:
        return [p for p in self.pods if p.name not in self.deleting]


def _quantity(milli: int) -> str:
    return f"{milli}m"


def _decimal(milli: int) -> str:
    return f"{milli / 1000:.3f}".rstrip("0").rstrip(".") if milli % 1000 else str(milli // 1000)


def scenario_step(sync: Sync, index: int) -> dict[str, Any]:
    step: dict[str, Any] = {"at": index * STEP, "pods": []}
    if index == 0:
        step["replicas"] = len(sync.live())
    # Listed by name, as the backtest lists them (the order never changes a decision, only the order
    # of names in the output).
    for pod in sorted(sync.pods, key=lambda p: p.name):
        entry: dict[str, Any] = {
            "name": pod.name,
            "phase": pod.phase(index),
            "ready": pod.ready(index),
            "readySince": pod.ready_since(index) - sync.at,
            "startedAt": pod.started - sync.at,
            "deleting": pod.name in sync.deleting,
            "sampleWindow": 120,
            "containers": [{"name": "app", "requests": {"cpu": _quantity(REQUEST_MILLI)}}],
        }
        if pod.name in sync.cpu:
            entry["containers"][0]["usage"] = {"cpu": _quantity(sync.cpu[pod.name])}
        if pod.name in sync.rps:
            entry["metrics"] = {"rps": _quantity(sync.rps[pod.name])}
        step["pods"].append(entry)
    return step


def web_history() -> tuple[list[Sync], dict[str, Any]]:
    """The history of shop/web, and the scenario with the same numbers."""
    live = [Pod(f"web-{i}", FAR_START, -1) for i in (1, 2, 3)]
    leaving: list[Pod] = []
    created = 3
    syncs: list[Sync] = []
    scenario: dict[str, Any] = {"spec": WEB_SPEC, "steps": []}
    for k in range(SYNCS):
        sync = Sync(T0 + k * STEP, [*live, *leaving], {p.name for p in leaving})
        running = [p for p in live if p.phase(k) == "Running"]
        for pod in running:
            sync.cpu[pod.name] = round(CPU_LOAD[k] / len(running))
            if not (pod.name == "web-2" and k in RPS_GAP):
                sync.rps[pod.name] = round(RPS_LOAD[k] / len(running))
        syncs.append(sync)
        scenario["steps"].append(scenario_step(sync, k))
        decided = run_scenario(parse_scenario(scenario))[-1].decision.replicas
        # The next sync's pods: the decision carried out (the newest pods go, shown once as deleting).
        while len(live) < decided:
            created += 1
            live.append(Pod(f"web-{created}", T0 + (k + 1) * STEP - 5, k + 1))
        live, leaving = live[:decided], live[decided:]
    return syncs, scenario


def add_web(backfill: Backfill, syncs: list[Sync]) -> None:
    for k, sync in enumerate(syncs):
        at = sync.at
        backfill.replica_set(NAMESPACE, "web-5d9f", "web", at)
        for pod in sync.pods:
            labels = {"namespace": NAMESPACE, "pod": pod.name}
            backfill.pod(
                NAMESPACE,
                pod.name,
                "web-5d9f",
                at,
                phase=pod.phase(k),
                ready=pod.ready(k),
                started=pod.started,
                deleting=pod.name in sync.deleting,
                requests={"app": {"cpu": _decimal(REQUEST_MILLI)}},
            )
            if pod.name in sync.cpu:
                backfill.add("app_cpu_usage_cores", {**labels, "container": "app"}, at, _decimal(sync.cpu[pod.name]))
            if pod.name in sync.rps:
                backfill.add("http_rps", labels, at, _decimal(sync.rps[pod.name]))
        backfill.deployment(NAMESPACE, "web", at, len(sync.live()))


def add_noise(backfill: Backfill) -> None:
    """Another workload in the same namespace, busy: none of it may reach web's replay."""
    for k in range(SYNCS):
        at = T0 + k * STEP
        backfill.replica_set(NAMESPACE, "other-77c4", "other", at)
        for pod in ("other-1", "other-2"):
            labels = {"namespace": NAMESPACE, "pod": pod}
            backfill.pod(NAMESPACE, pod, "other-77c4", at, started=T0 - 1000, requests={"app": {"cpu": "1"}})
            backfill.add("app_cpu_usage_cores", {**labels, "container": "app"}, at, "4")
            backfill.add("http_rps", labels, at, "900")


LEAN_SYNCS = 10


def add_lean(backfill: Backfill) -> None:
    """bare/lean: two pods with usage and rps, and nothing else kube-state-metrics would say."""
    for k in range(LEAN_SYNCS):
        at = T0 + k * STEP
        backfill.replica_set("bare", "lean-6b", "lean", at)
        for pod in ("lean-1", "lean-2"):
            backfill.pod("bare", pod, "lean-6b", at, phase=None, ready=None)
            backfill.add("app_cpu_usage_cores", {"namespace": "bare", "pod": pod, "container": "app"}, at, "0.2")
            backfill.add("http_rps", {"namespace": "bare", "pod": pod}, at, "30")


def backfill_text() -> str:
    syncs, _ = web_history()
    backfill = Backfill()
    add_web(backfill, syncs)
    add_noise(backfill)
    add_lean(backfill)
    from tests.backtest.prediction_data import add_step  # it imports this module's T0

    add_step(backfill)
    return backfill.text()


def spec_with(**changes: Any) -> dict[str, Any]:
    """WEB_SPEC with top-level fields replaced."""
    return {**WEB_SPEC, **changes}
