"""Upstream's ``name(<nil>)`` (a metric with no selector, as the HPA controller prints it) stays exact in
status and JSON, and is left out where people read: simulate's timeline, ``explain``, backtest's report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from autoscaler.backtest.report import Cost, Report, ScaleEventRecord, Tally, render_text
from autoscaler.cli.explain import explain_status
from autoscaler.core.explain import readable

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = "external metric queue_depth(<nil>) above target"


def test_the_one_function() -> None:
    assert readable(UPSTREAM) == "external metric queue_depth above target"
    assert readable("pods metric rps above target") == "pods metric rps above target"


def test_simulate_timeline_reads_without_nil_and_its_json_keeps_upstreams_text() -> None:
    scenario = str(ROOT / "config/scenarios/activation-queue-worker.yaml")
    table = subprocess.run(
        [sys.executable, "-m", "autoscaler", "simulate", scenario, "--explain"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "external metric queue_depth above target" in table
    assert "<nil>" not in table
    lines = subprocess.run(
        [sys.executable, "-m", "autoscaler", "simulate", scenario, "--output", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    reasons = [json.loads(line)["rescaleReason"] for line in lines.splitlines()]
    assert UPSTREAM in reasons


def test_explain_reads_without_nil() -> None:
    status = {
        "lastDecision": {"time": "t", "scaled": True, "currentReplicas": 4, "replicas": 8, "proposal": 8},
        "conditions": [
            {"type": "AbleToScale", "status": "True", "reason": "SucceededRescale", "message": UPSTREAM},
        ],
    }
    text = explain_status("default", "worker", status)
    assert "(SucceededRescale): external metric queue_depth above target" in text
    assert "<nil>" not in text


def test_backtest_report_reads_without_nil() -> None:
    report = Report(
        label="worker",
        source="http://prometheus",
        namespace="default",
        name="worker",
        workload="Deployment/worker",
        start=0.0,
        end=60.0,
        step=15.0,
        syncs=4,
        initial=4,
        final=8,
        low=4,
        high=8,
        mean=6.0,
        timeline=[(0.0, 4), (15.0, 8)],
        events=[ScaleEventRecord(15.0, 4, 8, UPSTREAM, None)],
        limits={},
        failures={"queue_depth": Tally(1, 30.0, f"{UPSTREAM}: no data")},
        undecided=Tally(),
        buckets=[],
        cost=Cost(replay=360.0, covered_syncs=0, replay_covered=0.0, real_covered=0.0),
        real_known=False,
    )
    text = render_text(report)
    assert "4 → 8    external metric queue_depth above target" in text
    assert "first at 1970-01-01T00:00:30Z: external metric queue_depth above target: no data" in text
    assert "<nil>" not in text
