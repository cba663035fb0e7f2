"""Running backtests in tests: target files, the replay with every step kept, comparable step JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from autoscaler.backtest.replay import BacktestOptions, BacktestResult, run_backtest
from autoscaler.backtest.target import load_target
from autoscaler.backtest.workload import RealWorkload
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.sync_step import StepResult
from autoscaler.prometheus import PrometheusClient, PrometheusSettings
from autoscaler.simulate.output import step_json
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd


def write_target(
    directory: Path, file_name: str, spec: dict[str, Any], *, namespace: str = hd.NAMESPACE, name: str = "web"
) -> Path:
    path = directory / file_name
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "autoscaler.dev/v1alpha1",
                "kind": "ScalingTarget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": spec,
            }
        )
    )
    return path


def web_options(**changes: Any) -> BacktestOptions:
    values: dict[str, Any] = {"start": hd.T0, "end": hd.T0 + (hd.SYNCS - 1) * hd.STEP, "step": hd.STEP}
    values.update(changes)
    return BacktestOptions(**values)


async def replay(
    prom: PrometheusSandbox, paths: Sequence[Path], options: BacktestOptions
) -> tuple[BacktestResult, dict[str, list[StepResult]], list[RealWorkload]]:
    """The backtest, with every run's steps and the real workload at each sync."""
    steps: dict[str, list[StepResult]] = {}
    reals: list[RealWorkload] = []

    def observe(label: str, result: StepResult, real: RealWorkload) -> None:
        steps.setdefault(label, []).append(result)
        if label == str(paths[0]):
            reals.append(real)

    settings = PrometheusSettings(url=prom.url)
    targets = [load_target(str(p)) for p in paths]
    async with PrometheusClient(settings) as client:
        result = await run_backtest(
            client, settings, ControllerSettings(), targets, options, labels=[str(p) for p in paths], observer=observe
        )
    return result, steps, reals


def relative(step: dict[str, Any], origin: float) -> dict[str, Any]:
    """A step's JSON with its times relative to ``origin`` (a scenario's time 0)."""

    def shift(value: Any) -> Any:
        return value - origin if isinstance(value, int | float) and not isinstance(value, bool) else value

    copy = dict(step)
    copy["at"] = shift(step["at"])
    copy["conditions"] = [{**c, "lastTransitionTime": shift(c.get("lastTransitionTime"))} for c in step["conditions"]]
    copy["history"] = {
        key: [{**item, "at": shift(item["at"])} for item in items] for key, items in step["history"].items()
    }
    return copy


def as_json(results: Sequence[StepResult], origin: float = 0.0) -> list[dict[str, Any]]:
    return [relative(step_json(r), origin) for r in results]
