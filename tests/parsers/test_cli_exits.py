"""The real ``autoscaler`` command (a subprocess), fed one bad input per input path: exit code 2, a message
naming the place, and no traceback. The in-process fuzz tests (test_fuzz.py) cover the thousands of
cases; these check that what the user sees is the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "prometheus: {url: 'http://127.0.0.1:9'}\n"
TARGET = (
    "apiVersion: autoscaler.dev/v1alpha1\nkind: ScalingTarget\nmetadata: {name: web}\n"
    "spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 3}\n"
)
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]\n"
    for previous, name in zip("abcdefg", "bcdefgh", strict=True)
)


def autoscaler(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autoscaler", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


CASES = {
    # name: (file content, command line with {file}, environment, what stderr must say)
    "scenario nested 3000 deep": (
        "spec: " + "[" * 3000 + "]" * 3000,
        ["simulate", "{file}"],
        {},
        "{file}: invalid YAML at line 1, column 38: nested too deeply",
    ),
    "scenario with a control character": (
        "spec:\n  x: \x07\n",
        ["simulate", "{file}"],
        {},
        "{file}: invalid YAML at line 2, column 6: character #x0007 is not allowed",
    ),
    "scenario of a billion values (aliases)": (
        LAUGHS,
        ["simulate", "{file}"],
        {},
        "{file}: too large: more than 1,000,000 values",
    ),
    "settings with a key written twice": (
        SETTINGS + "sync: {}\nsync: {}\n",
        ["run", "--config", "{file}"],
        {},
        '{file}: invalid YAML at line 3, column 1: duplicate key "sync" (first at line 2)',
    ),
    "an environment variable nested deep": (
        SETTINGS,
        ["run", "--config", "{file}"],
        {"AUTOSCALER_SYNC_PERIOD_SECONDS": "[" * 2000},
        "sync.periodSeconds: must be a number, not string",
    ),
    "targets file with a boolean as a key": (
        SETTINGS + "targets: {file}.targets\n",
        ["run", "--config", "{file}"],
        {},
        "{file}.targets: invalid YAML at line 6, column 3: a key must be a string",
    ),
    "backtest from a time past 9999": (
        TARGET.replace("maxReplicas: 3", "maxReplicas: 3, metrics: []"),
        ["backtest", "{file}", "--prometheus", "http://127.0.0.1:9", "--from", "9" * 400],
        {},
        "autoscaler backtest: '" + "9" * 400 + "' is out of range",
    ),
    "explain with a kubeconfig that is not UTF-8": (
        "users: caf\xe9\n",
        ["explain", "web", "--kubeconfig", "{file}"],
        {},
        "autoscaler explain: kubeconfig {file}: not UTF-8 text",
    ),
    "explain of a target without a name": (
        "",
        ["explain", "shop/"],
        {},
        "autoscaler explain: TARGET must be NAME or NAMESPACE/NAME",
    ),
    "demo for an infinite time": (
        "",
        ["demo", "--duration", "inf"],
        {},
        "autoscaler demo: --duration must be more than 0 and at most 7 days",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2_with_a_message(tmp_path: Path, case: str) -> None:
    content, command, env, expected = CASES[case]
    file = tmp_path / "input.yaml"
    file.write_bytes(
        content.encode("latin-1") if "not UTF-8" in case else content.replace("{file}", str(file)).encode()
    )
    if "targets file" in case:
        Path(f"{file}.targets").write_text(TARGET + "status:\n  on: x\n")
    result = autoscaler(*[part.replace("{file}", str(file)) for part in command], env=env)
    assert result.returncode == 2, result.stderr
    assert expected.replace("{file}", str(file)) in result.stderr
    assert "Traceback" not in result.stderr


QUICKSTART = ROOT / "config" / "scenarios" / "quickstart.yaml"


def run_in_process(*args: str) -> tuple[int, str]:
    import contextlib
    import io

    from autoscaler.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", str(QUICKSTART)],
        [
            "backtest",
            str(ROOT / "manifests" / "examples" / "worker-queue-to-zero.yaml"),
            "--prometheus",
            "http://127.0.0.1:9",
            "--from",
            "-1h",
        ],
    ],
)
def test_a_plot_that_cannot_be_written_is_refused_before_any_work(command: list[str]) -> None:
    """Found out before the scenario runs or history is read, not by a traceback at the end."""
    code, err = run_in_process(*command, "--plot", "/nonexistent/directory/plot.html")
    assert code == 2
    assert "/nonexistent/directory/plot.html: there is no directory '/nonexistent/directory'" in err


def test_thousands_of_problems_are_summed_up(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 3}\n"
        "steps: [" + ", ".join(["{at: x}"] * 1000) + "]\n"
    )
    code, err = run_in_process("simulate", str(scenario))
    assert code == 2
    lines = err.splitlines()
    assert lines[0] == f"{scenario}: invalid (1001 problems):"  # each step's time, and the first's replicas
    assert lines[1:4] == [
        "  steps[0].at: must be a number, not string",
        "  steps[0].replicas: Required value",
        "  steps[1].at: must be a number, not string",
    ]
    assert len(lines) == 1 + 100 + 1 and lines[-1] == "  … and 901 more"
