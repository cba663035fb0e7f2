"""A week of request-rate history with a daily morning ramp (and a random walk that never repeats), as
Prometheus would hold it while a reactive autoscaler scaled the workload: the predictive scale-up demo
(``autoscaler backtest --demo``) and its benchmark (``bench/prediction.py``) replay it.

The workload is Deployment ``shop/web``, scaled on an External metric, ``shop_http_requests_per_second``
(AverageValue 10 per pod: the ideal count is the rate ÷ 10). The history holds the rate, the Deployment's
replicas as :data:`REACTIVE`'s spec set them (made by the decision engine itself, sync by sync), and one
ownership series per pod (kube-state-metrics' other pod series are left out, to keep a week small: the
backtest then takes the pods as Running and Ready, and says so in its notes).

The seasonal load: 35 requests per second at night; in the morning (at 07:45 UTC, a minute or two earlier or
later each day) a 15-minute ramp to 265, easing to 235 by 08:10; 235 all day; an evening decline from 17:00 to
19:00; a ripple of ±2.5 requests per second (never enough to change the ideal count by itself). Why the ramp
overshoots: with the engine's 10 % tolerance, a load that settles just above a count the ramp's last step
happened to reach stays there (235 on 22 replicas is within it) and is under-provisioned all day by the
ideal count's measure (24) whatever forecasts it; a ramp that tops out above its plateau ends on enough
replicas, so the figure measures the ramp, which is what a forecast can change.
"""

from __future__ import annotations

import math
import random
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from autoscaler.backtest.target import load_target
from autoscaler.core.observation import ExternalReading, Observation, ScaleInfo
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.sync import SyncInputs, SyncState, sync
from autoscaler_sandbox.backtest_demo import DemoUnavailable
from autoscaler_sandbox.history import OpenMetricsHistory
from autoscaler_sandbox.prometheus import PrometheusSandbox, find_binary

START = 1_714_953_600.0  # 2024-05-06T00:00:00Z, a Monday
DAY = 86_400
DAYS = 7
STEP = 30  # the recorded syncs and samples
NAMESPACE = "shop"
NAME = "web"
METRIC = "shop_http_requests_per_second"
QUERY = f'sum({METRIC}{{service="web"}})'
PER_POD = 10
POD_STARTUP = 90
NIGHT, TOP, DAYTIME = 35.0, 265.0, 235.0
RAMP_AT_HOURS, RAMP_MINUTES = 7.75, 15.0
# The ramp's start, day by day (seconds from 07:45): real traffic is not to the minute.
RAMP_SHIFTS = (0, 90, -60, 30, -90, 60, 0)


def _external(name: str = METRIC) -> list[dict[str, Any]]:
    return [
        {
            "type": "External",
            "external": {
                "metric": {"name": name},
                "target": {"type": "AverageValue", "averageValue": str(PER_POD)},
                "query": QUERY,
            },
        }
    ]


REACTIVE: dict[str, Any] = {
    "apiVersion": "autoscaler.dev/v1alpha1",
    "kind": "ScalingTarget",
    "metadata": {"name": NAME, "namespace": NAMESPACE},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
        "minReplicas": 2,
        "maxReplicas": 40,
        "metrics": _external(),
    },
}
"""The spec that scaled the workload while its history was recorded: reactive."""
PREDICTIVE: dict[str, Any] = {
    **REACTIVE,
    "spec": {
        **REACTIVE["spec"],
        "prediction": {"model": "seasonalNaive", "podStartupSeconds": POD_STARTUP, "stepSeconds": 60},
    },
}
"""The same spec with predictive scale-up (seasonal naive: the same time yesterday, a minute's resolution)."""


def seasonal_rate(t: float) -> float:
    """Requests per second at ``t``: the daily curve with its morning ramp, and a small ripple."""
    day = math.floor((t - START) / DAY)
    shift = RAMP_SHIFTS[day % len(RAMP_SHIFTS)]
    hour = ((t - START) % DAY - shift) / 3600
    ramp_end = RAMP_AT_HOURS + RAMP_MINUTES / 60
    if hour < RAMP_AT_HOURS or hour >= 19:
        base = NIGHT
    elif hour < ramp_end:
        base = NIGHT + (TOP - NIGHT) * (hour - RAMP_AT_HOURS) / (ramp_end - RAMP_AT_HOURS)
    elif hour < ramp_end + 1 / 6:
        base = TOP - (TOP - DAYTIME) * (hour - ramp_end) * 6
    elif hour < 17:
        base = DAYTIME
    else:
        base = DAYTIME - (DAYTIME - NIGHT) * (hour - 17) / 2
    ripple = 1.5 * math.sin(2 * math.pi * t / 1700) + 1.0 * math.sin(2 * math.pi * t / 4100 + day)
    return base + ripple


def random_walk(
    seed: int = 40, *, low: float = NIGHT, high: float = DAYTIME, step_sigma: float = 6.0
) -> Callable[[float], float]:
    """A rate that wanders at random between ``low`` and ``high`` (reflected at both), a new step every
    minute: nothing in it repeats from one day to the next."""
    generator = random.Random(seed)
    minutes = DAYS * DAY // 60 + 2
    values = [(low + high) / 2]
    for _ in range(minutes):
        value = values[-1] + generator.gauss(0.0, step_sigma)
        if value < low:
            value = 2 * low - value
        if value > high:
            value = 2 * high - value
        values.append(value)

    def rate(t: float) -> float:
        index = max(0, min(len(values) - 1, int((t - START) // 60)))
        return values[index]

    return rate


def history(rate: Callable[[float], float], spec: dict[str, Any] | None = None, *, days: int = DAYS) -> str:
    """The history (OpenMetrics for promtool) of ``days`` days of ``rate`` while ``spec`` (default
    :data:`REACTIVE`) scaled the workload, its new pods serving after :data:`POD_STARTUP` seconds."""
    with tempfile.TemporaryDirectory(prefix="autoscaler-seasonal-") as directory:
        path = Path(directory) / "reactive.yaml"
        path.write_text(yaml.safe_dump(spec or REACTIVE, sort_keys=False), encoding="utf-8")
        target = load_target(str(path))
    settings = ControllerSettings()
    state = SyncState()
    out = OpenMetricsHistory()
    replicas = 2
    pods: list[str] = [f"web-5d8f-{i}" for i in range(replicas)]
    created = replicas
    for k in range(days * DAY // STEP + 1):
        now = START + k * STEP
        value = rate(now)
        out.add(METRIC, {"namespace": NAMESPACE, "service": NAME}, now, f"{value:.3f}")
        for name in pods:
            out.add(
                "kube_pod_owner",
                {
                    "namespace": NAMESPACE,
                    "pod": name,
                    "owner_kind": "ReplicaSet",
                    "owner_name": "web-5d8f",
                    "owner_is_controller": "true",
                },
                now,
                "1",
            )
        out.replica_set(NAMESPACE, "web-5d8f", NAME, now)
        out.deployment(NAMESPACE, NAME, now, len(pods))
        observation = Observation(
            ScaleInfo(len(pods), len(pods), "app=web"), [], [ExternalReading((round(value * 1000),), now)]
        )
        outcome = sync(target.spec, SyncInputs(observation), state, settings, now)
        state, replicas = outcome.state, outcome.decision.replicas
        while len(pods) < replicas:
            created += 1
            pods.append(f"web-5d8f-{created}")
        del pods[replicas:]
    return out.text()


def specs_text() -> Sequence[tuple[str, dict[str, Any]]]:
    """The two specs the demo and the benchmark compare, with their file names."""
    return (("reactive.yaml", REACTIVE), ("predictive.yaml", PREDICTIVE))


# What ``--demo`` replays: the last four days (the first three are the forecast's history).
REPLAY_FROM = START + 3 * DAY
REPLAY_TO = START + DAYS * DAY - STEP


def write_specs(directory: Path) -> tuple[Path, Path]:
    """:data:`REACTIVE` and :data:`PREDICTIVE` as files (what ``--demo`` compares without TARGET.yaml)."""
    paths = []
    for name, spec in specs_text():
        path = directory / name
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


@contextmanager
def week_prometheus(rate: Callable[[float], float] = seasonal_rate) -> Iterator[str]:
    """A private Prometheus holding the week of ``rate``; yields its URL, and stops it on exit."""
    missing = [name for name in ("prometheus", "promtool") if find_binary(name) is None]
    if missing:
        raise DemoUnavailable(f"--demo needs {' and '.join(missing)} (Debian package 'prometheus')")
    # Samples every 30 s, read at the syncs' own times: a short lookback makes a removed pod vanish at once.
    prometheus = PrometheusSandbox(extra_args=["--query.lookback-delta=25s"])
    try:
        prometheus.backfill(history(rate))
        prometheus.start()
        yield prometheus.url
    finally:
        prometheus.close()
