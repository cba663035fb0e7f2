"""``autoscaler backtest`` as a user runs it: the report, JSON, --compare, plots, and bad input
(exit code 2 with a message, never a traceback)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from autoscaler.cli import main
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest import prediction_data as pd
from tests.backtest.files import html_data, png_chunks, png_series
from tests.backtest.helpers import write_target
from tests.backtest.test_compare import CAPPED

FROM = "2023-11-14T22:13:20Z"  # T0
TO = str(int(hd.T0) + (hd.SYNCS - 1) * hd.STEP)


def backtest(*args: str) -> int:
    return main(["backtest", *args])


@pytest.mark.prometheus
def test_text_report(history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    assert backtest(str(path), "--prometheus", history_prometheus.url, "--from", FROM, "--to", TO, "--step", "15s") == 0
    out = capsys.readouterr().out
    assert "Backtest of shop/web (Deployment shop/web)" in out
    assert "2023-11-14T22:13:20Z → 2023-11-14T22:23:05Z, a sync every 15s: 40 syncs" in out
    assert "Scale events: 10 (4 up, 6 down)" in out
    assert "2023-11-14T22:14:50Z     5 → 7    pods metric rps above target  [limited: ScaleUpLimit]" in out
    assert "ScaleUpLimit (2 pods per 30s)" in out and "ScaleDownStabilized (60s window)" in out
    assert "real    3,945 pod-seconds" in out and "change  +0.4 % against the real workload" in out
    assert "Replicas over time (per 1m):" in out


@pytest.mark.prometheus
def test_json_report(history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    assert backtest(str(path), "--prometheus", history_prometheus.url, "--from", FROM, "--to", TO, "-o", "json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["syncs"] == 40 and report["stepSeconds"] == 15
    assert report["replicas"] == {"initial": 3, "final": 4, "min": 3, "max": 10, "mean": 6.6}
    assert report["timeline"][:3] == [
        {"at": FROM, "replicas": 3},
        {"at": "2023-11-14T22:14:20Z", "replicas": 5},
        {"at": "2023-11-14T22:14:50Z", "replicas": 7},
    ]
    assert report["scaleEvents"][1] == {
        "at": "2023-11-14T22:14:50Z",
        "from": 5,
        "to": 7,
        "reason": "pods metric rps above target",
        "limitedBy": "ScaleUpLimit",
    }
    limits = {(x["reason"], x["detail"]): x["seconds"] for x in report["limited"]}
    assert limits == {
        ("ScaleUpLimit", "2 pods per 30s"): 75,
        ("ScaleDownLimit", "1 pod per 15s"): 75,
        ("ScaleDownStabilized", "60s window"): 45,
    }
    assert report["cost"]["replayPodSeconds"] == 3960 and report["cost"]["realPodSecondsCompared"] == 3945
    assert report["history"]["rangeQueries"] == 11


@pytest.mark.prometheus
@pytest.mark.plot
def test_compare_with_plots(
    history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    web = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    capped = write_target(tmp_path, "capped.yaml", CAPPED)
    png, html = tmp_path / "out.png", tmp_path / "out.html"
    assert (
        backtest(
            str(web),
            "--compare",
            str(capped),
            "--prometheus",
            history_prometheus.url,
            "--from",
            FROM,
            "--to",
            TO,
            "--plot",
            str(png),
            "--plot",
            str(html),
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "web.yaml" in captured.out and "capped.yaml" in captured.out and "TooManyReplicas" in captured.out
    assert f"wrote {png}" in captured.err
    names = {s["name"] for s in png_series(png)}
    assert {
        "web.yaml: cpu utilization",
        "capped.yaml: cpu utilization",
        "cpu target 50%",
        "web.yaml: replicas",
        "capped.yaml: replicas",
        "web.yaml: desired replicas",
        "real replicas",
        "minReplicas 2",
        "web.yaml: maxReplicas 12",
        "capped.yaml: maxReplicas 6",
        "web.yaml: limited: ScaleUpLimit",
        "capped.yaml: limited: TooManyReplicas",
    } <= names
    (width, height), texts = png_chunks(png)
    assert width >= 1000 and height >= 800 and texts["Title"].startswith("Backtest of shop/web")
    data = html_data(html)
    assert data["absoluteTimes"] is True and data["runs"] == ["web.yaml", "capped.yaml"]
    series = {s["name"]: s for s in data["series"]}
    assert series["web.yaml: replicas"]["x"][0] == hd.T0
    assert series["web.yaml: replicas"]["y"][:8] == [3, 3, 3, 3, 5, 5, 7, 7]
    assert series["real replicas"]["y"][:8] == [3, 3, 3, 3, 3, 5, 5, 7]
    assert max(v for v in series["capped.yaml: replicas"]["y"] if v is not None) == 6
    limited = series["capped.yaml: limited: TooManyReplicas"]
    assert limited["reason"] == "TooManyReplicas" and sum(v is not None for v in limited["y"]) == 15
    assert series["cpu target 50%"]["y"] == [50.0, 50.0] and series["capped.yaml: maxReplicas 6"]["y"] == [6, 6]


@pytest.mark.prometheus
def test_a_rejected_query_is_bad_input(
    history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = hd.spec_with(
        metrics=[
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue"},
                    "target": {"type": "Value", "value": "1"},
                    "query": "sum(queue_depth{",
                },
            }
        ]
    )
    path = write_target(tmp_path, "broken.yaml", spec)
    assert backtest(str(path), "--prometheus", history_prometheus.url, "--from", FROM, "--to", TO) == 2
    err = capsys.readouterr().err
    assert "reading the history failed" in err and "rejected the query" in err and "Traceback" not in err


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unreachable_prometheus_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    code = backtest(str(path), "--prometheus", f"http://127.0.0.1:{closed_port()}", "--from", "-1h", "--timeout", "2")
    assert code == 1
    err = capsys.readouterr().err
    assert "unreachable" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "yesterday"], "'yesterday' is not a time; use RFC 3339"),
        (["--from", "2024-05-07T09:00:00"], "has no time zone"),
        (["--from", "-1h", "--to", "-2h"], "--to (-2h) must be later than --from (-1h)"),
        (["--from", "now+1h", "--to", "now+2h"], "is in the future"),
        (["--from", "-1h", "--step", "0s"], "'0s': must be longer than 0"),
        (["--from", "-1h", "--step", "fast"], "'fast' is not a duration"),
        (["--from", "-1000d", "--step", "1s"], "at most 10,000,000"),
        (["--from", "-1h", "--pod-startup", "soon"], "--pod-startup 'soon' is not a duration"),
        (["--from", "-1h", "--plot", "out.svg"], "unknown plot format '.svg'; use .png or .html"),
    ],
)
def test_bad_arguments_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    assert backtest(str(path), "--prometheus", "http://127.0.0.1:9", *args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_bad_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: autoscaler.dev/v1alpha1\nkind: ScalingTarget\nmetadata: {namespace: shop}\n"
        "spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 0}\n"
    )
    assert backtest(str(bad), "--prometheus", "http://127.0.0.1:9", "--from", "-1h") == 2
    err = capsys.readouterr().err
    assert f"{bad}: invalid (2 problems):" in err
    assert "metadata.name: Required value" in err and "spec.maxReplicas: must be greater than 0" in err
    assert backtest(str(tmp_path / "missing.yaml"), "--prometheus", "http://127.0.0.1:9", "--from", "-1h") == 2
    assert "cannot read file" in capsys.readouterr().err
    queryless = tmp_path / "queryless.yaml"
    queryless.write_text(
        "scaleTargetRef: {kind: Deployment, name: web}\nmaxReplicas: 3\nmetrics:\n"
        "- {type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: 1}}}\n"
    )
    assert backtest(str(queryless), "--prometheus", "http://127.0.0.1:9", "--from", "-1h") == 2
    assert "spec.metrics[0].pods.query: Required value" in capsys.readouterr().err


def test_missing_prometheus_and_mismatched_compare_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AUTOSCALER_PROMETHEUS_URL", raising=False)
    web = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    assert backtest(str(web), "--from", "-1h") == 2
    assert "--prometheus URL is required" in capsys.readouterr().err
    other = write_target(tmp_path, "other.yaml", hd.spec_with(scaleTargetRef={"kind": "Deployment", "name": "api"}))
    assert backtest(str(web), "--compare", str(other), "--prometheus", "http://127.0.0.1:9", "--from", "-1h") == 2
    assert "both must replay the same workload" in capsys.readouterr().err


def test_selector_placeholder_needs_selector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = hd.spec_with(
        metrics=[
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "rps"},
                    "target": {"type": "AverageValue", "averageValue": "1"},
                    "query": "sum by (namespace, pod) (http_rps{<<selector>>})",
                },
            }
        ]
    )
    path = write_target(tmp_path, "sel.yaml", spec)
    assert backtest(str(path), "--prometheus", f"http://127.0.0.1:{closed_port()}", "--from", "-1h") == 2
    assert "its query uses <<selector>>, which needs the scale's selector: pass --selector" in capsys.readouterr().err


def test_missing_plot_library_says_how_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "plotly" else real(name, *a))
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    assert backtest(str(path), "--prometheus", "http://127.0.0.1:9", "--from", "-1h", "--plot", "x.html") == 2
    err = capsys.readouterr().err
    assert "needs plotly, which is not installed" in err and "pip install 'autoscaler[plot]'" in err
    quickstart = Path(__file__).resolve().parents[2] / "config" / "scenarios" / "quickstart.yaml"
    assert main(["simulate", str(quickstart), "--plot", "x.html"]) == 2
    assert "pip install 'autoscaler[plot]'" in capsys.readouterr().err


@pytest.mark.prometheus
def test_settings_file_gives_prometheus_step_and_controller(
    history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_target(tmp_path, "web.yaml", hd.WEB_SPEC)
    config = tmp_path / "settings.yaml"
    config.write_text(
        f"prometheus: {{url: '{history_prometheus.url}'}}\nsync: {{periodSeconds: 30}}\n"
        "controller: {tolerance: 0.5}\n"
    )
    assert backtest(str(path), "--config", str(config), "--from", FROM, "--to", TO) == 0
    out = capsys.readouterr().out
    assert "a sync every 30s: 20 syncs" in out
    tolerant = re.search(r"Scale events: (\d+)", out)
    config.write_text(f"prometheus: {{url: '{history_prometheus.url}'}}\nsync: {{periodSeconds: 30}}\n")
    assert backtest(str(path), "--config", str(config), "--from", FROM, "--to", TO) == 0
    default = re.search(r"Scale events: (\d+)", capsys.readouterr().out)
    assert tolerant is not None and default is not None
    assert int(tolerant.group(1)) < int(default.group(1))  # the controller's tolerance reached the engine
    # The target's own sync period (syncPeriodSeconds, KEDA's pollingInterval) is the step before the service's.
    own = write_target(tmp_path, "own.yaml", {**hd.WEB_SPEC, "syncPeriodSeconds": 45})
    assert backtest(str(own), "--config", str(config), "--from", FROM, "--to", TO) == 0
    assert "a sync every 45s: 14 syncs" in capsys.readouterr().out
    broken = tmp_path / "tls.yaml"
    broken.write_text("prometheus: {url: 'https://127.0.0.1:9', tls: {caFile: /nonexistent/ca.crt}}\n")
    assert backtest(str(path), "--config", str(broken), "--from", FROM, "--to", TO) == 1
    err = capsys.readouterr().err
    assert "cannot load the TLS files" in err and "Traceback" not in err


@pytest.mark.prometheus
def test_the_demo_replays_a_week_and_the_forecast_meets_the_morning_ramp(capsys: pytest.CaptureFixture[str]) -> None:
    """``--demo`` (issue 40): a week of history with a morning ramp, the reactive spec beside the same spec
    predicting; the difference is the one docs/prediction.md shows."""
    assert backtest("--demo", "--no-progress", "--output", "json") == 0
    captured = capsys.readouterr()
    runs = {run["label"]: run for run in json.loads(captured.out)["runs"]}
    assert list(runs) == ["reactive.yaml", "predictive.yaml"]
    reactive, predictive = runs["reactive.yaml"], runs["predictive.yaml"]
    assert reactive["forecast"] is None
    assert predictive["forecast"]["decidedSyncs"] > 0 and predictive["forecast"]["scaleDownsCausedByForecast"] == 0
    under = {label: run["provisioning"]["underProvisionedPodSeconds"] for label, run in runs.items()}
    assert 0 < under["predictive.yaml"] <= under["reactive.yaml"] / 2, under
    hours = {label: run["provisioning"]["replicaHours"] for label, run in runs.items()}
    assert hours["predictive.yaml"] <= hours["reactive.yaml"] * 1.10, hours
    assert "a synthetic week of Deployment shop/web's request rate" in captured.err


@pytest.mark.prometheus
def test_the_day_demo_needs_nothing_but_the_binaries(capsys: pytest.CaptureFixture[str]) -> None:
    assert backtest("--demo-day", "--no-progress", "--output", "json") == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    labels = [run["label"] for run in document["runs"]] if "runs" in document else None
    assert labels == ["current.yaml", "proposed.yaml"], document.keys()
    assert "a synthetic day (2024-05-06T00:00:00Z to 2024-05-07T00:00:00Z)" in captured.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--demo-day", "--from", "-1h"], "--demo-day brings its own Prometheus and day: leave out --from"),
        (["--demo", "--to", "-1h"], "--demo brings its own Prometheus and week: leave out --to"),
        (["--demo", "--demo-day"], "--demo and --demo-day: choose one"),
        (["--prometheus", "http://127.0.0.1:1", "--from", "-1h"], "TARGET.yaml is required (or --demo"),
        (["web.yaml", "--prometheus", "http://127.0.0.1:1"], "--from is required (or --demo"),
    ],
)
def test_demo_and_its_absence_are_explained(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert backtest(*argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.prometheus
@pytest.mark.plot
def test_the_forecast_is_plotted(
    history_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A predicting spec beside the reactive one: a panel with the forecast metric's value and its forecast
    line, and the replicas the forecast asked for in the replicas panel (PNG and HTML)."""
    steady = write_target(tmp_path, "steady.yaml", pd.STEADY_SPEC, namespace=pd.NAMESPACE, name="steady")
    predictive = write_target(
        tmp_path,
        "predictive.yaml",
        {**pd.STEADY_SPEC, "prediction": pd.PREDICTION},
        namespace=pd.NAMESPACE,
        name="steady",
    )
    png, html = tmp_path / "forecast.png", tmp_path / "forecast.html"
    arguments = ["--prometheus", history_prometheus.url, "--from", FROM, "--to", TO, "--pod-startup", "45s"]
    assert backtest(str(steady), "--compare", str(predictive), *arguments, "--plot", str(png), "--plot", str(html)) == 0
    assert "forecast error (MAPE)" in capsys.readouterr().out
    panel = "queue_rate: value and forecast"
    described = {s["name"]: s for s in png_series(png)}
    assert described["predictive.yaml: queue_rate"]["panel"] == panel
    assert described["predictive.yaml: queue_rate forecast"]["kind"] == "forecast"
    assert described["predictive.yaml: forecast replicas"]["panel"] == "replicas"
    series = {s["name"]: s for s in html_data(html)["series"]}
    line = series["predictive.yaml: queue_rate forecast"]
    assert line["panel"] == panel and line["y"] == [pd.value_at(t) for t in line["x"]]  # exact: the season repeats
    assert all(hd.T0 <= t <= int(TO) for t in line["x"])
    asked = series["predictive.yaml: forecast replicas"]["y"]
    assert asked[11] == 3 and asked[15] == 6  # what the forecast asked for (tests/backtest/test_provisioning.py)
    assert all(s["run"] == 1 for s in series.values() if s["panel"] == panel)  # the reactive spec forecasts nothing
    assert "steady.yaml: forecast replicas" not in series
