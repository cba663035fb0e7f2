"""``autoscaler run`` flags and ``autoscaler explain`` text."""

from pathlib import Path

import pytest

from autoscaler.cli import build_parser, main
from autoscaler.cli.explain import explain_status
from autoscaler.cli.run import flag_overrides


def test_run_flags_become_setting_overrides() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "--prometheus-url",
            "http://p:9090",
            "--namespace",
            "a",
            "--namespace",
            "b",
            "--dry-run",
            "--no-leader-election",
            "--sync-period",
            "5",
        ]
    )
    assert flag_overrides(args) == {
        ("prometheus", "url"): "http://p:9090",
        ("kubernetes", "namespaces"): ["a", "b"],
        ("dryRun",): True,
        ("sync", "periodSeconds"): 5.0,
        ("leaderElection", "enabled"): False,
    }


def test_run_with_invalid_settings_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("prometheus: {url: 'http://p:9090'}\nsync: {periodSecond: 3}\n")
    assert main(["run", "--config", str(bad)]) == 2
    assert 'sync.periodSecond: unknown field (did you mean "periodSeconds"?)' in capsys.readouterr().err


def test_explain_text() -> None:
    status = {
        "lastDecision": {
            "time": "2026-11-21T10:00:00Z",
            "scaled": True,
            "currentReplicas": 2,
            "replicas": 6,
            "proposal": 8,
            "limitedBy": "ScaleUpLimit",
            "error": None,
            "explanation": ["Current replicas: 2.", "Scale up 2 → 6 (applied): x above target."],
        },
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "SucceededRescale", "message": "ok"}],
        "dryRun": True,
    }
    text = explain_status("shop", "web", status)
    assert text.splitlines()[0] == "ScalingTarget shop/web"
    assert "scaled 2 → 6 replicas (metric proposal: 8)" in text
    assert "limited by: ScaleUpLimit" in text
    assert "  Current replicas: 2." in text
    assert "AbleToScale=True (SucceededRescale): ok" in text
    assert "dry run" in text
    assert "no decision yet" in explain_status("shop", "web", {})


def test_explain_says_when_there_was_no_metric_proposal() -> None:
    status = {
        "lastDecision": {
            "time": "2026-11-21T10:00:00Z",
            "scaled": False,
            "currentReplicas": 3,
            "replicas": 3,
            "proposal": None,
            "explanation": [],
        }
    }
    text = explain_status("shop", "web", status)
    assert "kept 3 → 3 replicas (no metric proposal)" in text
    assert "None" not in text


def test_a_missing_targets_file_is_not_called_a_settings_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "targets.yaml"
    assert main(["run", "--prometheus-url", "http://127.0.0.1:1", "--targets", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"--targets {missing}: invalid (1 problem):"
    assert "settings" not in err and "cannot read file" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the document is empty, where an object was expected"),
        ("[1, 2]\n", "the document must be an object, not list"),
    ],
)
def test_an_empty_or_non_object_file_says_so_without_an_empty_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(content)
    assert main(["simulate", str(scenario)]) == 2
    assert capsys.readouterr().err.splitlines()[1] == f"  {message}"


def test_a_recording_that_cannot_be_written_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-directory" / "run.jsonl"
    assert main(["run", "--prometheus-url", "http://127.0.0.1:1", "--record", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"autoscaler run: --record {missing}: cannot write it: No such file or directory"
    )
