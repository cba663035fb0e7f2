"""``autoscaler backtest`` and named Prometheus backends (issue 36, item 5): the replay reads the backend its
target's metrics name in ``--config``'s ``prometheus.backends``, and never reads a metric from another one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from autoscaler.cli import main
from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTarget, MetricTargetType
from autoscaler.prometheus.backends import one_backend
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest.helpers import write_target

FROM = "2023-11-14T22:13:20Z"  # T0
TO = str(int(hd.T0) + (hd.SYNCS - 1) * hd.STEP)
DEAD = "http://127.0.0.1:9"  # nothing answers there


def _spec(*backends: str | None) -> dict[str, Any]:
    """WEB_SPEC with its metrics read from ``backends`` in turn."""
    spec = copy.deepcopy(hd.WEB_SPEC)
    for metric, backend in zip(spec["metrics"], backends, strict=False):
        source = metric[next(key for key in metric if key != "type")]
        if backend is not None:
            source["backend"] = backend
    return spec


def _metric(backend: str | None) -> MetricSpec:
    target = MetricTarget(MetricTargetType.VALUE, value=None)
    return MetricSpec(MetricSourceType.EXTERNAL, f"from-{backend}", target, query="q", backend=backend)


def test_one_backend_is_the_one_every_metric_names() -> None:
    default, other = PrometheusSettings(url="http://default"), PrometheusSettings(url="http://other")
    named = {"other": other}
    assert one_backend(default, named, []) is default
    assert one_backend(default, named, [_metric(None), _metric("default")]) is default
    assert one_backend(default, named, [_metric("other"), _metric("other")]) is other
    assert one_backend(default, named, [_metric(None), _metric("other")]) == (
        'the metrics read from more than one Prometheus backend (External metric "from-None" from default, '
        'External metric "from-other" from other); a replay reads one'
    )
    assert one_backend(default, named, [_metric("gone")]) == (
        "the metrics read from backend gone, which the settings do not have (default, other; prometheus.backends)"
    )


@pytest.mark.prometheus
def test_the_replay_reads_the_backend_the_metrics_name(
    history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text(f"prometheus: {{url: '{DEAD}', backends: {{history: {{url: '{history_prometheus.url}'}}}}}}\n")
    named = write_target(tmp_path, "named.yaml", _spec("history", "history"))
    assert main(["backtest", str(named), "--config", str(config), "--from", FROM, "--to", TO, "--no-progress"]) == 0
    assert "Scale events:" in capsys.readouterr().out
    mixed = write_target(tmp_path, "mixed.yaml", _spec("history", None))
    assert main(["backtest", str(mixed), "--config", str(config), "--from", FROM, "--to", TO, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "more than one Prometheus backend" in err and "Traceback" not in err
