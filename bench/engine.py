"""Decisions per second of the pure decision engine on one core.

Each decision is one target's whole sync (`decide`): two metrics (CPU utilization and a Pods metric),
N pods with per-container CPU usage and a per-pod sample, behavior with default policies, a history
of recent recommendations and scale events. The readings are held as the service's batched reads make
them (``core/pod_columns.py``: a dict of values per reading), or with ``--readings records`` as a
``PodUsage`` / ``Sample`` per pod (what tests and ``autoscaler simulate`` build). Run:

    python bench/engine.py [--seconds 3] [--readings columns|records]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from autoscaler.core.decision import TargetState, decide
from autoscaler.core.history import DecisionHistory, Recommendation, ScaleEvent
from autoscaler.core.observation import (
    ContainerInfo,
    Observation,
    PodInfo,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
    ScaleInfo,
)
from autoscaler.core.pod_columns import SampleColumns, UsageColumns
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import (
    DEFAULT_SCALE_DOWN_RULES,
    DEFAULT_SCALE_UP_RULES,
    Behavior,
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
    TargetSpec,
)
from autoscaler.values.quantity import Quantity

NOW = 1_000_000.0
SPEC = TargetSpec(
    CrossVersionObjectReference("Deployment", "web", "apps/v1"),
    max_replicas=5000,
    min_replicas=1,
    metrics=(
        MetricSpec(
            MetricSourceType.RESOURCE, "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=60)
        ),
        MetricSpec(
            MetricSourceType.PODS,
            "rps",
            MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("100")),
        ),
    ),
    behavior=Behavior(DEFAULT_SCALE_UP_RULES, DEFAULT_SCALE_DOWN_RULES),
)


def workload(pods: int, readings: str = "columns") -> tuple[Observation, TargetState]:
    infos = [
        PodInfo(
            f"web-{i}",
            ready_since=NOW - 3600,
            started_at=NOW - 3700,
            containers=(ContainerInfo("app", {"cpu": 500}), ContainerInfo("proxy", {"cpu": 100}, True)),
        )
        for i in range(pods)
    ]
    usage = {p.name: PodUsage({"app": 300 + i % 50, "proxy": 20}, NOW - 5) for i, p in enumerate(infos)}
    rps = {p.name: Sample(90_000 + i, NOW - 5) for i, p in enumerate(infos)}
    if readings == "columns":
        cpu = ResourceReading(UsageColumns({name: dict(u.containers) for name, u in usage.items()}, NOW - 5))
        per_pod = PodsReading(SampleColumns({name: s.value for name, s in rps.items()}, NOW - 5))
    else:
        cpu, per_pod = ResourceReading(usage), PodsReading(rps)
    observation = Observation(ScaleInfo(pods, pods, "app=web"), infos, (cpu, per_pod))
    history = DecisionHistory(
        recommendations=tuple(Recommendation(pods, NOW - 15 * k) for k in range(20)),
        scale_up_events=(ScaleEvent(2, NOW - 40),),
        scale_down_events=(ScaleEvent(1, NOW - 200),),
    )
    return observation, TargetState(history=history)


def measure(pods: int, seconds: float, readings: str) -> tuple[float, int]:
    observation, state = workload(pods, readings)
    settings = ControllerSettings()
    decide(SPEC, observation, state, settings, NOW)  # warm up
    count = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(20):
            decide(SPEC, observation, state, settings, NOW)
        count += 20
        now = time.process_time()
        if now >= deadline:
            return count / (now - start), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per size")
    parser.add_argument(
        "--readings", choices=("columns", "records"), default="columns", help="how the readings are held"
    )
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    print(
        f"python {platform.python_version()} on {platform.machine()}, one core, process CPU time,"
        f" readings as {args.readings}"
    )
    print(f"{'pods':>6}  {'decisions/s':>12}  {'µs/decision':>12}  {'runs':>8}")
    for pods in (10, 100, 1000):
        rate, count = measure(pods, args.seconds, args.readings)
        print(f"{pods:>6}  {rate:>12,.0f}  {1e6 / rate:>12,.1f}  {count:>8}")


if __name__ == "__main__":
    main()
