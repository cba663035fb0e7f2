"""Make the example plots of docs/backtest.md (needs the plot extra and the prometheus binary).

    python scripts/plot_examples.py            # writes docs/images/*.png and prints the reports

1. ``autoscaler simulate config/scenarios/quickstart.yaml --plot docs/images/simulate-quickstart.png``.
2. A day of synthetic history for Deployment shop/web, as kube-state-metrics and cAdvisor would
   have recorded it while an HPA with ``docs/images/current.yaml``'s spec scaled it (the history is
   made by the engine itself, sync by sync), loaded with promtool into a private Prometheus; then
   ``autoscaler backtest current.yaml --compare proposed.yaml --plot docs/images/backtest-example.png``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autoscaler.backtest.replay import sync_once  # noqa: E402
from autoscaler.backtest.target import load_target  # noqa: E402
from autoscaler.cli import main  # noqa: E402
from autoscaler.core.decision import TargetState  # noqa: E402
from autoscaler.core.observation import (  # noqa: E402
    ConditionStatus,
    ContainerInfo,
    Observation,
    PodInfo,
    PodUsage,
    ResourceReading,
    ScaleInfo,
)
from autoscaler.core.settings import ControllerSettings  # noqa: E402
from autoscaler.sandbox import PrometheusSandbox  # noqa: E402
from autoscaler.sandbox.history import OpenMetricsHistory  # noqa: E402

IMAGES = ROOT / "docs" / "images"
START = 1_714_953_600.0  # 2024-05-06T00:00:00Z
STEP = 30
HOURS = 24
REQUEST = 0.5  # cores per pod

def cpu(utilization: int) -> list[dict[str, object]]:
    return [{"type": "Resource", "resource": {"name": "cpu",
                                              "target": {"type": "Utilization", "averageUtilization": utilization}}}]


CURRENT = {
    "apiVersion": "autoscaler.dev/v1alpha1", "kind": "ScalingTarget",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "minReplicas": 3, "maxReplicas": 30,
             "metrics": cpu(60)},
}
PROPOSED = {
    **CURRENT,
    "spec": {**CURRENT["spec"], "maxReplicas": 20,
             "metrics": cpu(70),
             "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
                          "scaleDown": {"stabilizationWindowSeconds": 120,
                                        "policies": [{"type": "Percent", "value": 20, "periodSeconds": 60}]}}},
}


def load(t: float) -> float:
    """Cores the workload needs: a day's curve, and a lunchtime spike."""
    hour = (t - START) / 3600
    daily = 1.2 + 3.3 * max(0.0, math.sin(math.pi * (hour - 6) / 15)) if 6 <= hour <= 21 else 1.2
    spike = 3.0 if 12.5 <= hour < 12.9 else 0.0
    return daily + spike + 0.15 * math.sin(hour * 7.3)


def history() -> str:
    """What the cluster recorded while the current spec scaled the workload."""
    target = load_target(str(IMAGES / "current.yaml"))
    settings = ControllerSettings()
    pods: list[tuple[str, float]] = [(f"web-7f9c-{i}", START - 86_400) for i in range(3)]
    counters: dict[str, float] = {}
    created = 3
    state = TargetState()
    out = OpenMetricsHistory()
    for k in range(HOURS * 3600 // STEP + 1):
        now = START + k * STEP
        ready = [name for name, born in pods if now >= born + 30]
        share = load(now) / max(len(ready), 1)
        infos, usage = [], {}
        for name, born in pods:
            is_ready = name in ready
            cores = share if is_ready else 0.05
            counters[name] = counters.get(name, 0.0) + cores * STEP
            infos.append(PodInfo(name, ready=ConditionStatus.TRUE if is_ready else ConditionStatus.FALSE,
                                 ready_since=born + 30 if is_ready else born, started_at=born,
                                 containers=(ContainerInfo("app", {"cpu": 500}),)))
            usage[name] = PodUsage({"app": round(cores * 1000)}, now, 120)
            out.pod("shop", name, "web-7f9c", now, ready=is_ready, started=born,
                    requests={"app": {"cpu": str(REQUEST)}})
            out.add("container_cpu_usage_seconds_total", {"namespace": "shop", "pod": name, "container": "app"},
                    now, f"{counters[name]:.3f}")
        out.replica_set("shop", "web-7f9c", "web", now)
        out.deployment("shop", "web", now, len(pods))
        observation = Observation(ScaleInfo(len(pods), len(pods), "app=web"), infos, [ResourceReading(usage)])
        decision, state = sync_once(target, settings, observation, state, now)
        while len(pods) < decision.replicas:
            created += 1
            pods.append((f"web-7f9c-{created}", now + 5))
        del pods[decision.replicas:]
    return out.text()


def main_() -> int:
    IMAGES.mkdir(parents=True, exist_ok=True)
    quickstart = ROOT / "config" / "scenarios" / "quickstart.yaml"
    main(["simulate", str(quickstart.relative_to(ROOT)), "--plot", str(IMAGES / "simulate-quickstart.png")])
    for name, document in (("current.yaml", CURRENT), ("proposed.yaml", PROPOSED)):
        (IMAGES / name).write_text(yaml.safe_dump(document, sort_keys=False))
    # Backfilled data has no staleness markers: a short lookback makes a removed pod vanish at once,
    # as a scraped series does when its stale marker is written.
    prom = PrometheusSandbox(extra_args=["--query.lookback-delta=25s"])
    try:
        prom.backfill(history())
        prom.start()
        end = START + HOURS * 3600
        return main(["backtest", str(IMAGES / "current.yaml"), "--compare", str(IMAGES / "proposed.yaml"),
                     "--prometheus", prom.url, "--from", str(int(START)), "--to", str(int(end)), "--step", f"{STEP}s",
                     "--plot", str(IMAGES / "backtest-example.png")])
    finally:
        prom.close()


if __name__ == "__main__":
    sys.exit(main_())
