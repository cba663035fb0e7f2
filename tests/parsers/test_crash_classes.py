"""The crash classes of issue 12 (D7), each as the user met it: every one of these printed a traceback and
exited 1; each must be a validation error naming where the problem is, with exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autoscaler.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "config" / "scenarios" / "quickstart.yaml"

SETTINGS = "prometheus: {url: 'http://127.0.0.1:9'}\n"
TARGET_HEAD = "apiVersion: autoscaler.dev/v1alpha1\nkind: ScalingTarget\n"
SPEC = "spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 3}\n"


def run_cli(*args: str) -> tuple[int, str]:
    """``main`` in-process (the same function the console script calls): exit code and stderr."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(args))
    return code, err.getvalue()


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def test_a_scenario_without_spec(tmp_path: Path) -> None:
    scenario = write(tmp_path, "s.yaml", "steps:\n- {at: 0, replicas: 1}\n")
    code, err = run_cli("simulate", scenario)
    assert code == 2
    assert "spec: Required value" in err


def test_a_400_digit_integer_in_settings(tmp_path: Path) -> None:
    settings = write(tmp_path, "settings.yaml", SETTINGS + f"sync: {{periodSeconds: {'9' * 400}}}\n")
    code, err = run_cli("run", "--config", settings)
    assert code == 2
    assert "sync.periodSeconds: must be between 1 and 3600" in err


def test_a_metadata_that_is_not_an_object_in_a_targets_file(tmp_path: Path) -> None:
    targets = write(tmp_path, "targets.yaml", TARGET_HEAD + "metadata:\n  name worker\n" + SPEC)
    settings = write(tmp_path, "settings.yaml", SETTINGS + f"targets: {targets}\n")
    code, err = run_cli("run", "--config", settings)
    assert code == 2
    assert f"{targets}[0].metadata: must be an object, not string" in err


def test_a_binary_key_in_a_targets_file(tmp_path: Path) -> None:
    targets = write(
        tmp_path,
        "targets.yaml",
        TARGET_HEAD + "metadata: {name: w}\n" + SPEC + "status:\n  ? !!binary aGVsbG8=\n  : 1\n",
    )
    settings = write(tmp_path, "settings.yaml", SETTINGS + f"targets: {targets}\n")
    code, err = run_cli("run", "--config", settings)
    assert code == 2
    assert "line 6, column 5" in err and "!!binary" in err


def test_huge_values_in_a_scenario(tmp_path: Path) -> None:
    scenario = write(
        tmp_path,
        "s.yaml",
        SPEC.replace("maxReplicas: 3", "maxReplicas: 3, minReplicas: 1")
        + """
steps:
- at: 0
  replicas: 1
  pods: [{name: a, containers: [{name: c, requests: {cpu: 1n}, usage: {cpu: 1e306}}]}]
""",
    )
    code, err = run_cli("simulate", scenario)
    assert code == 2
    assert "steps[0].pods[0].containers[0].usage.cpu: must be at most 9223372036854775807m" in err


@pytest.mark.parametrize("command", ["simulate", "run", "targets", "backtest"])
def test_a_file_that_is_not_utf8(tmp_path: Path, command: str) -> None:
    bad = write(tmp_path, "bad.yaml", b"spec:\n  name: caf\xe9\n")
    if command == "simulate":
        code, err = run_cli("simulate", bad)
    elif command == "run":
        code, err = run_cli("run", "--config", bad)
    elif command == "backtest":
        code, err = run_cli("backtest", bad, "--prometheus", "http://127.0.0.1:9", "--from", "-1h")
    else:
        settings = write(tmp_path, "settings.yaml", SETTINGS + f"targets: {bad}\n")
        code, err = run_cli("run", "--config", settings)
    assert code == 2
    assert f"{bad}: not UTF-8 text: byte 0xe9 at line 2, column 12" in err


def test_a_broken_pipe_on_stdout_ends_quietly() -> None:
    """``autoscaler simulate … | head -1``: the reader goes away; no traceback, no message."""
    script = f"{sys.executable} -m autoscaler simulate {QUICKSTART} --explain | head -1"
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.stdout.split() == ["at", "current", "metrics", "(value→proposal)", "desired", "final", "why"]
    assert result.stderr == ""
    assert result.returncode in (0, 1)  # 0 when everything was written before head left


def test_a_reader_that_is_gone_before_anything_is_written() -> None:
    """``| true``: the pipe is closed before the first write. Python's documented exit code on EPIPE, 1."""
    script = f"{sys.executable} -m autoscaler simulate {QUICKSTART} -o json --explain | true"
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "")
