"""Predictive scale-up's goal (issue 40), measured by backtest: a reactive spec and the same spec with
``spec.prediction`` replayed over the same history, with a 90 s pod start-up.

Two workloads, each a week of history written with promtool into a private Prometheus
(``autoscaler_sandbox/seasonal.py``); the last four days are replayed (the first three are the forecast's
history), a sync every 30 s:

* **seasonal**: a daily morning ramp (35 → 255 requests per second in 15 minutes). Goal: under-provisioned
  pod-seconds at least halved, replica-hours up by at most 10 %, and no scale-down caused by the forecast:
  none at a sync where the forecast decided, and none taking the predictive spec below the reactive one's
  count at the same sync.
* **random walk**: a rate that never repeats. Goal: the predictive spec within 5 % of the reactive one on both
  figures (its guard, the forecast's error over the last season, switches the forecast off).

Prints a table and exits 1 when a goal is missed. Needs the prometheus and promtool binaries. Run:

    python bench/prediction.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from autoscaler.backtest.replay import BacktestOptions, BacktestResult, run_backtest
from autoscaler.backtest.report import Report
from autoscaler.backtest.target import load_target
from autoscaler.core.settings import ControllerSettings
from autoscaler.prometheus import PrometheusClient, PrometheusSettings
from autoscaler_sandbox import PrometheusSandbox, seasonal

REPLAY_FROM = seasonal.START + 3 * seasonal.DAY
REPLAY_TO = seasonal.START + seasonal.DAYS * seasonal.DAY - seasonal.STEP


@dataclass(frozen=True)
class Figures:
    under: float  # under-provisioned pod-seconds
    hours: float  # replica-hours
    mape: float | None
    decided: int
    forecast_scale_downs: int
    usable: int
    syncs: int


def figures(report: Report) -> Figures:
    tally = report.forecast
    return Figures(
        report.provisioning.under_pod_seconds,
        report.replica_hours,
        tally.mape if tally else None,
        tally.decided_syncs if tally else 0,
        tally.caused_scale_downs if tally else 0,
        tally.usable_syncs if tally else 0,
        tally.syncs if tally else 0,
    )


# The specs replayed: the reactive one, the predictive one (the demo's: the horizon is the pods' start-up plus
# a sync period, 120 s), and the same with a horizon of 300 s (covering a ramp that comes up to two minutes
# earlier than the day before).
LONGER_HORIZON = 300
SPECS = (
    ("reactive", seasonal.REACTIVE),
    ("predictive", seasonal.PREDICTIVE),
    (
        f"predictive, horizon {LONGER_HORIZON} s",
        {
            **seasonal.PREDICTIVE,
            "spec": {
                **seasonal.PREDICTIVE["spec"],
                "prediction": {**seasonal.PREDICTIVE["spec"]["prediction"], "horizonSeconds": LONGER_HORIZON},
            },
        },
    ),
)


async def replay(url: str, directory: Path) -> BacktestResult:
    paths = []
    for index, (_, spec) in enumerate(SPECS):
        path = directory / f"spec-{index}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        paths.append(path)
    settings = PrometheusSettings(url=url, timeout_seconds=120)
    targets = [load_target(str(p)) for p in paths]
    options = BacktestOptions(
        start=REPLAY_FROM, end=REPLAY_TO, step=float(seasonal.STEP), pod_startup=float(seasonal.POD_STARTUP)
    )
    async with PrometheusClient(settings) as client:
        return await run_backtest(
            client,
            settings,
            ControllerSettings(),
            targets,
            options,
            labels=[label for label, _ in SPECS],
        )


def run_workload(rate: Callable[[float], float]) -> tuple[list[Figures], float]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-prediction-") as directory:
        prometheus = PrometheusSandbox(extra_args=["--query.lookback-delta=25s"])
        try:
            prometheus.backfill(seasonal.history(rate))
            prometheus.start()
            result = asyncio.run(replay(prometheus.url, Path(directory)))
        finally:
            prometheus.close()
    return [figures(run.report) for run in result.runs], time.monotonic() - started


def change(value: float, base: float) -> float:
    return (value - base) / base if base else (0.0 if value == base else float("inf"))


def main() -> int:
    missed = []
    print(
        f"Predictive scale-up (issue 40): 4 days replayed at {seasonal.STEP} s after 3 days of history, pod "
        f"start-up {seasonal.POD_STARTUP} s"
    )
    print(
        f"{'workload':<12} {'spec':<27} {'under-prov. pod-s':>17} {'change':>8} {'replica-h':>10} {'change':>8} "
        f"{'MAPE':>7} {'forecast used':>13} {'decided':>8} {'caused scale-downs':>18}"
    )
    for name, rate in (("seasonal", seasonal.seasonal_rate), ("random walk", seasonal.random_walk())):
        runs, seconds = run_workload(rate)
        reactive = runs[0]
        for (label, _), f in zip(SPECS, runs, strict=True):
            under, hours = change(f.under, reactive.under), change(f.hours, reactive.hours)
            mape = f"{f.mape:.1f} %" if f.mape is not None else "-"
            used = f"{f.usable}/{f.syncs}" if f.syncs else "-"
            print(
                f"{name:<12} {label:<27} {f.under:>17,.0f} {100 * under:>7.1f}% {f.hours:>10,.1f} "
                f"{100 * hours:>7.1f}% {mape:>7} {used:>13} {f.decided:>8} {f.forecast_scale_downs:>18}"
            )
            if f is reactive:
                continue
            if f.forecast_scale_downs:
                missed.append(f"{name}, {label}: {f.forecast_scale_downs} scale-downs caused by the forecast")
            if name == "seasonal":
                if not f.under <= reactive.under / 2:
                    missed.append(f"{name}, {label}: under-provisioning {100 * under:+.1f} %, goal at most -50 %")
                if not hours <= 0.10:
                    missed.append(f"{name}, {label}: replica-hours {100 * hours:+.1f} %, goal at most +10 %")
            else:
                if abs(under) > 0.05:
                    missed.append(f"{name}, {label}: under-provisioning {100 * under:+.1f} %, goal within ±5 %")
                if abs(hours) > 0.05:
                    missed.append(f"{name}, {label}: replica-hours {100 * hours:+.1f} %, goal within ±5 %")
        print(f"{'':<12} ({seconds:.0f} s to write, load and replay)")
    if missed:
        print("\nMissed:")
        for line in missed:
            print(f"  {line}")
        return 1
    print("\nEvery goal met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
