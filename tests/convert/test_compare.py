"""``autoscaler convert --compare``: the converted target backtested beside the old HPA's recorded
decisions (kube-state-metrics series in a real Prometheus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from autoscaler.cli import main
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest.files import png_series
from tests.convert import compare_data

pytestmark = pytest.mark.prometheus
FROM = str(int(hd.T0))
TO = str(int(hd.T0) + (hd.SYNCS - 1) * hd.STEP)


def inputs(tmp_path: Path, *names: str) -> list[str]:
    hpas = tmp_path / "hpas.yaml"
    hpas.write_text(yaml.safe_dump_all([compare_data.hpa(name) for name in names]))
    adapter = tmp_path / "adapter.yaml"
    adapter.write_text(yaml.safe_dump(compare_data.ADAPTER_CONFIG))
    return [str(hpas), "--adapter-config", str(adapter)]


def test_the_hpa_the_history_followed_agrees(
    series_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "convert",
            *inputs(tmp_path, "web"),
            "--compare",
            "--prometheus",
            series_prometheus.url,
            "--from",
            FROM,
            "--to",
            TO,
            "--output-dir",
            str(tmp_path / "out"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "HorizontalPodAutoscaler shop/web → ScalingTarget shop/web" in out
    assert "agreement: 100.0 % of 40 syncs equal; largest gap 0" in out
    assert "FLAGGED" not in out
    assert (tmp_path / "out" / "shop.web.yaml").exists()


def test_a_history_that_disagrees_is_flagged_with_why(
    series_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "convert",
            *inputs(tmp_path, "web-old", "web"),
            "--compare",
            "--prometheus",
            series_prometheus.url,
            "--from",
            FROM,
            "--to",
            TO,
            "--output",
            "json",
            "--plot-dir",
            str(tmp_path / "plots"),
        ]
    )
    assert code == 1
    report = json.loads(capsys.readouterr().out)
    old, followed = report["targets"]
    assert old["oldHpa"] == "web-old" and old["flagged"] is True
    assert old["equalShare"] < 0.9 and old["overSeconds"] > 0  # rps at twice the old rate: more replicas
    assert set(old["causes"]) <= {"timing", "window", "limit", "tolerance", "values", "metric"}
    assert "values" in old["causes"] or "limit" in old["causes"]
    assert followed["flagged"] is False and followed["equalShare"] == 1.0
    series = {s["name"]: s for s in png_series(tmp_path / "plots" / "shop.web-old.png")}
    assert "old autoscaler's desired replicas" in series and "real replicas" in series


def test_text_flag_and_causes(
    series_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "convert",
                *inputs(tmp_path, "web-old"),
                "--compare",
                "--prometheus",
                series_prometheus.url,
                "--from",
                FROM,
                "--to",
                TO,
                "--agreement",
                "99",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "FLAGGED: below the 99 % agreement threshold. Where they differ, why:" in out


def test_no_recorded_decisions_is_flagged(
    series_prometheus: PrometheusSandbox, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "convert",
                *inputs(tmp_path, "web-unknown"),
                "--compare",
                "--prometheus",
                series_prometheus.url,
                "--from",
                FROM,
                "--to",
                TO,
            ]
        )
        == 1
    )
    assert "no recorded decision of HPA web-unknown" in capsys.readouterr().out
