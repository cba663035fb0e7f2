"""Plot files hold the expected series: checked through PNG text chunks and the data embedded in
HTML, never pixels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoscaler.cli import main
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.plot.output import write_plots
from autoscaler.plot.records import HvpaPoint, MetricPoint, StepRecord
from autoscaler.plot.series import PlotRun, plot_data
from autoscaler.values.quantity import Quantity
from tests.backtest.files import html_data, png_chunks, png_series

pytestmark = pytest.mark.plot

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "config" / "scenarios" / "quickstart.yaml"


def test_simulate_writes_png_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png, html = tmp_path / "q.png", tmp_path / "q.html"
    assert main(["simulate", str(QUICKSTART), "--plot", str(png), "--plot", str(html), "-o", "json"]) == 0
    captured = capsys.readouterr()
    steps = [json.loads(line) for line in captured.out.splitlines()]
    assert f"wrote {png}" in captured.err and f"wrote {html}" in captured.err
    (width, height), texts = png_chunks(png)
    assert (width, height) == (1300, 910) and texts["Title"] == f"Simulation of {QUICKSTART}"
    described = {s["name"]: s for s in png_series(png)}
    assert set(described) == {
        "cpu utilization",
        "cpu target 60%",
        "http_requests_per_second (Pods, average value)",
        "http_requests_per_second target 100",
        "replicas",
        "desired replicas",
        "minReplicas 2",
        "maxReplicas 20",
        "limited: ScaleDownStabilized",
    }
    assert described["limited: ScaleDownStabilized"] == {
        "name": "limited: ScaleDownStabilized",
        "panel": "replicas",
        "kind": "limit",
        "points": 3,
    }
    data = html_data(html)
    assert data["absoluteTimes"] is False
    assert data["panels"] == ["cpu utilization", "http_requests_per_second (Pods, average value)", "replicas"]
    series = {s["name"]: s for s in data["series"]}
    assert series["replicas"]["x"] == [s["at"] for s in steps]
    assert series["replicas"]["y"] == [s["replicas"] for s in steps]
    assert series["desired replicas"]["y"] == [s["desiredReplicas"] for s in steps]
    assert series["cpu utilization"]["y"] == [
        s["metrics"][0]["resource"]["current"]["averageUtilization"] for s in steps
    ]
    assert series["http_requests_per_second (Pods, average value)"]["y"][2] == 150
    limited = series["limited: ScaleDownStabilized"]
    assert [x for x, y in zip(limited["x"], limited["y"], strict=True) if y is not None] == [
        s["at"] for s in steps if s["limitedBy"] == "ScaleDownStabilized"
    ]
    assert data["end"] == 240  # the last step holds one more (45 s) step
    page = html.read_text()
    assert "Plotly.newPlot" in page and "<script src=" not in page  # self-contained


HVPA_SPEC = parse_target_spec(
    {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 8,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
            }
        ],
    },
    require_queries=False,
)


def hvpa_step(
    at: int, replicas: int, cpu: str, memory: str, *, blocked: str | None = None, limited: str | None = None
) -> StepRecord:
    """A per-step record of a target with an ``hvpa`` section."""
    requests = {("app", "cpu"): Quantity.parse(cpu).as_float(), ("app", "memory"): Quantity.parse(memory).as_float()}
    return StepRecord(
        at,
        replicas,
        replicas,
        replicas,
        limited,
        (MetricPoint(HVPA_SPEC.metrics[0], Quantity.parse("900Mi").as_float(), False),),
        HvpaPoint(replicas + 1, requests, blocked),
    )


def test_hvpa_requests_get_their_panels(tmp_path: Path) -> None:
    steps = [
        hvpa_step(0, 2, "250m", "512Mi"),
        hvpa_step(60, 2, "500m", "1Gi", limited="ScaleUpLimit"),
        hvpa_step(120, 3, "500m", "1Gi", blocked="maintenance window"),
    ]
    data = plot_data([PlotRun("hvpa.yaml", steps, HVPA_SPEC)], "HVPA", absolute_times=False)
    assert [title for title, _ in data.panels] == [
        "memory (average value)",
        "replicas",
        "HVPA cpu requests per pod",
        "HVPA memory requests per pod",
    ]
    png, html = tmp_path / "h.png", tmp_path / "h.html"
    write_plots([str(png), str(html)], data)
    names = {s["name"] for s in png_series(png)}
    assert {
        "app cpu request",
        "app memory request",
        "HVPA desired replicas",
        "HVPA blocked: maintenance window",
        "limited: ScaleUpLimit",
        "memory (average value)",
        "memory target 1Gi",
    } <= names
    series = {s["name"]: s for s in html_data(html)["series"]}
    assert series["app cpu request"]["y"] == [0.25, 0.5, 0.5]
    assert series["app memory request"]["y"] == [512 * 2**20, 2**30, 2**30]
    assert series["HVPA desired replicas"]["y"] == [3, 3, 4]
    assert series["HVPA blocked: maintenance window"]["y"] == [None, None, 3]
    assert series["memory (average value)"]["y"] == [900 * 2**20] * 3
    assert series["memory target 1Gi"]["y"] == [2**30, 2**30]


def test_simulate_plots_a_shipped_hvpa_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = ROOT / "config" / "scenarios" / "hvpa-rise-and-fall.yaml"
    html, png = tmp_path / "h.html", tmp_path / "h.png"
    assert main(["simulate", str(scenario), "-o", "json", "--plot", str(html), "--plot", str(png)]) == 0
    steps = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    data = html_data(html)
    # Its metrics are never read (HVPA alone decides), so they get no panel.
    assert data["panels"] == ["replicas", "HVPA cpu requests per pod", "HVPA memory requests per pod"]
    series = {s["name"]: s for s in data["series"]}
    assert series["main cpu request"]["y"][0] == pytest.approx(
        float(steps[0]["hvpa"]["requests"]["main"]["cpu"].removesuffix("m")) / 1000
    )
    assert series["HVPA desired replicas"]["y"] == [s["hvpa"]["desiredReplicas"] for s in steps]
    reasons = {s["hvpa"]["blocked"] for s in steps if s["hvpa"]["blocked"]}
    assert {name for name in series if name.startswith("HVPA blocked: ")} == {f"HVPA blocked: {r}" for r in reasons}
    assert {s["name"] for s in png_series(png)} == set(series)
