"""``autoscaler simulate`` as a user runs it: the table, --output json, and errors with exit code 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autoscaler.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "config" / "scenarios" / "quickstart.yaml"


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(QUICKSTART)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["at", "current", "metrics", "(value→proposal)", "desired", "final", "why"]
    assert "ScaleDownStabilized" in out and "* = scaled this step" in out


def test_explain_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(QUICKSTART), "--explain"]) == 0
    out = capsys.readouterr().out
    assert "set aside: unready web-d, web-e" in out
    assert "the 120s window holds a recommendation of 7" in out


def test_json_output_has_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(QUICKSTART), "--output", "json"]) == 0
    steps = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [s["at"] for s in steps] == [0, 15, 30, 45, 60, 75, 120, 150, 195]
    for step in steps:
        assert {
            "at",
            "currentReplicas",
            "metrics",
            "desiredReplicas",
            "replicas",
            "scaled",
            "conditions",
            "explanation",
            "history",
        } <= set(step)
        for metric in step["metrics"]:
            assert {
                "type",
                "proposedReplicas",
                "readyPodCount",
                "unreadyPods",
                "missingPods",
                "ignoredPods",
                "error",
            } <= set(metric)
        for condition in step["conditions"]:
            assert {"type", "status", "reason", "message"} <= set(condition)
    third = steps[2]
    cpu, rps = third["metrics"]
    assert cpu["resource"] == {"name": "cpu", "current": {"averageUtilization": 95, "averageValue": "475m"}}
    assert cpu["unreadyPods"] == ["web-d", "web-e"]
    assert rps["pods"]["current"] == {"averageValue": "150"}
    assert rps["missingPods"] == ["web-d"]
    assert steps[1]["history"]["recommendations"][-1] == {"replicas": 5, "at": 15}


def test_invalid_scenario_exits_2_with_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("""
spec:
  scaleTargetRef: {kind: Deployment, name: web}
  maxReplicas: 5
  behavior: {scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 0}]}}
settings: {tolerance: -1}
steps:
- {at: 0, replicas: 2, pods: [{name: a, phase: Runing}]}
- {at: 0}
""")
    assert main(["simulate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "spec.behavior.scaleUp.policies[0].periodSeconds: must be between 1 and 1800" in err
    assert "settings.tolerance: must be between 0 and 10" in err  # the rules of the service's controller settings
    assert 'steps[0].pods[0].phase: Unsupported value: "Runing"' in err and '(did you mean "Running"?)' in err
    assert "steps[1].at: must be later than steps[0].at (0)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("content", ["spec: [", "just a string", ""])
def test_unreadable_yaml_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    assert main(["simulate", str(bad)]) == 2
    assert "invalid" in capsys.readouterr().err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "/nonexistent/scenario.yaml"]) == 2
    assert "cannot read file" in capsys.readouterr().err


def test_console_script_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "autoscaler", "simulate", str(QUICKSTART), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 9
