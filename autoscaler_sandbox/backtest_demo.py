"""``autoscaler backtest --demo-day``: a backtest with nothing to set up.

A day of synthetic history for Deployment ``shop/web``, as kube-state-metrics and cAdvisor would have
recorded it while an HPA with :data:`CURRENT`'s spec scaled it (the history is made by the decision
engine itself, sync by sync, over a daily load curve with a lunchtime spike), is loaded with promtool into
a private Prometheus on loopback; the backtest then runs against it like against any Prometheus. Needs the
``prometheus`` and ``promtool`` binaries (Debian package ``prometheus``).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from autoscaler.backtest.target import load_target
from autoscaler.core.observation import (
    ConditionStatus,
    ContainerInfo,
    Observation,
    PodInfo,
    PodUsage,
    ResourceReading,
    ScaleInfo,
)
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.sync import SyncInputs, SyncState, sync
from autoscaler_sandbox.history import OpenMetricsHistory
from autoscaler_sandbox.prometheus import PrometheusSandbox, find_binary

START = 1_714_953_600.0  # 2024-05-06T00:00:00Z
STEP = 30
HOURS = 24
END = START + HOURS * 3600
REQUEST_CORES = 0.5
POD_READY_AFTER = 30.0


def _cpu(utilization: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
        }
    ]


CURRENT: dict[str, Any] = {
    "apiVersion": "autoscaler.dev/v1alpha1",
    "kind": "ScalingTarget",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 3,
        "maxReplicas": 30,
        "metrics": _cpu(60),
    },
}
"""The spec that scaled the workload while its history was recorded."""
PROPOSED: dict[str, Any] = {
    **CURRENT,
    "spec": {
        **CURRENT["spec"],
        "maxReplicas": 20,
        "metrics": _cpu(70),
        "behavior": {
            "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
            "scaleDown": {
                "stabilizationWindowSeconds": 120,
                "policies": [{"type": "Percent", "value": 20, "periodSeconds": 60}],
            },
        },
    },
}
"""A change to try against that history: a higher target, a lower cap, paced scaling."""


class DemoUnavailable(RuntimeError):
    """The demo cannot run here (the message says what is missing)."""


def load(t: float) -> float:
    """Cores the workload needs at ``t``: a day's curve and a lunchtime spike."""
    hour = (t - START) / 3600
    daily = 1.2 + 3.3 * max(0.0, math.sin(math.pi * (hour - 6) / 15)) if 6 <= hour <= 21 else 1.2
    spike = 3.0 if 12.5 <= hour < 12.9 else 0.0
    return daily + spike + 0.15 * math.sin(hour * 7.3)


def history(current_spec_path: str) -> str:
    """What the cluster recorded while ``current_spec_path`` scaled the workload, as OpenMetrics."""
    target = load_target(current_spec_path)
    settings = ControllerSettings()
    pods: list[tuple[str, float]] = [(f"web-7f9c-{i}", START - 86_400) for i in range(3)]
    counters: dict[str, float] = {}
    created = len(pods)
    state = SyncState()
    out = OpenMetricsHistory()
    for k in range(HOURS * 3600 // STEP + 1):
        now = START + k * STEP
        ready = [name for name, born in pods if now >= born + POD_READY_AFTER]
        share = load(now) / max(len(ready), 1)
        infos, usage = [], {}
        for name, born in pods:
            is_ready = name in ready
            cores = share if is_ready else 0.05
            counters[name] = counters.get(name, 0.0) + cores * STEP
            infos.append(
                PodInfo(
                    name,
                    ready=ConditionStatus.TRUE if is_ready else ConditionStatus.FALSE,
                    ready_since=born + POD_READY_AFTER if is_ready else born,
                    started_at=born,
                    containers=(ContainerInfo("app", {"cpu": round(REQUEST_CORES * 1000)}),),
                )
            )
            usage[name] = PodUsage({"app": round(cores * 1000)}, now, 120)
            out.pod(
                "shop",
                name,
                "web-7f9c",
                now,
                ready=is_ready,
                started=born,
                requests={"app": {"cpu": str(REQUEST_CORES)}},
            )
            out.add(
                "container_cpu_usage_seconds_total",
                {"namespace": "shop", "pod": name, "container": "app"},
                now,
                f"{counters[name]:.3f}",
            )
        out.replica_set("shop", "web-7f9c", "web", now)
        out.deployment("shop", "web", now, len(pods))
        observation = Observation(ScaleInfo(len(pods), len(pods), "app=web"), infos, [ResourceReading(usage)])
        outcome = sync(target.spec, SyncInputs(observation), state, settings, now)
        state, replicas = outcome.state, outcome.decision.replicas
        while len(pods) < replicas:
            created += 1
            pods.append((f"web-7f9c-{created}", now + 5))
        del pods[replicas:]
    return out.text()


def write_specs(directory: Path) -> tuple[Path, Path]:
    """:data:`CURRENT` and :data:`PROPOSED` as files (what ``--demo-day`` replays when given no TARGET.yaml)."""
    current, proposed = directory / "current.yaml", directory / "proposed.yaml"
    current.write_text(yaml.safe_dump(CURRENT, sort_keys=False), encoding="utf-8")
    proposed.write_text(yaml.safe_dump(PROPOSED, sort_keys=False), encoding="utf-8")
    return current, proposed


@contextmanager
def demo_prometheus() -> Iterator[str]:
    """A private Prometheus holding the synthetic day; yields its URL, and stops it on exit."""
    missing = [name for name in ("prometheus", "promtool") if find_binary(name) is None]
    if missing:
        raise DemoUnavailable(f"--demo-day needs {' and '.join(missing)} (Debian package 'prometheus')")
    with tempfile.TemporaryDirectory(prefix="autoscaler-backtest-demo-") as directory:
        current, _ = write_specs(Path(directory))
        # Backfilled data has no staleness markers: a short lookback makes a removed pod vanish at once,
        # as a scraped series does when its stale marker is written.
        prometheus = PrometheusSandbox(extra_args=["--query.lookback-delta=25s"])
        try:
            prometheus.backfill(history(str(current)))
            prometheus.start()
            yield prometheus.url
        finally:
            prometheus.close()
