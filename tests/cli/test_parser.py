"""The command line's parser: one per command, values that start with a dash where documented
(``--from -2h``), and nothing heavy loaded to build it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from autoscaler.cli import build_parser
from autoscaler.cli.parser import join_dash_values

PACKAGE = Path(__file__).resolve().parents[2] / "autoscaler"


@pytest.mark.parametrize(
    ("command", "given", "expected"),
    [
        (["backtest", "t.yaml"], ["--from", "-1d", "--to", "-2h"], {"start": "-1d", "end": "-2h"}),
        (["backtest", "t.yaml"], ["--from", "-1d12h", "--step", "-15s"], {"start": "-1d12h", "step": "-15s"}),
        (
            ["backtest", "t.yaml"],
            ["--from=-30m", "--chunk", "-1h", "--pod-startup", "-5"],
            {"start": "-30m", "chunk": "-1h", "pod_startup": "-5"},
        ),
        (["backtest", "t.yaml"], ["--fr", "-500ms"], {"start": "-500ms"}),  # an abbreviation, as argparse allows
        (["backtest"], ["--from", "-2h", "t.yaml"], {"start": "-2h", "target": "t.yaml"}),
        (
            ["convert", "hpa.yaml", "--compare"],
            ["--from", "-7d", "--to", "-1d", "--step", "30s"],
            {"start": "-7d", "end": "-1d", "step": "30s"},
        ),
    ],
)
def test_times_before_now_are_values(command: list[str], given: list[str], expected: dict[str, str]) -> None:
    args = build_parser().parse_args([*command, *given])
    assert {name: getattr(args, name) for name in expected} == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["backtest", "t.yaml", "--from", "-x"],  # not a number or a duration: an option, as ever
        ["backtest", "t.yaml", "--from", "--to", "-2h"],  # --from has no value
        ["backtest", "t.yaml", "--t", "-2h"],  # --to or --timeout?
        ["simulate", "s.yaml", "--from", "-2h"],  # simulate has no --from
    ],
)
def test_everything_else_is_read_as_before(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    assert "usage: autoscaler" in capsys.readouterr().err


def test_joining() -> None:
    options = ("--from", "--to")
    assert join_dash_values(["--from", "-2h", "--name", "-2h"], options) == ["--from=-2h", "--name", "-2h"]
    assert join_dash_values(["--from", "-2h", "--", "--to", "-1h"], options) == ["--from=-2h", "--", "--to", "-1h"]
    assert join_dash_values(["--fro", "-2h"], options, abbreviations=False) == ["--fro", "-2h"]
    assert join_dash_values(["--from"], options) == ["--from"]
    assert join_dash_values(["--from", "-1.5"], options) == ["--from=-1.5"]
    assert join_dash_values(["--from", "-2x"], options) == ["--from", "-2x"]


def test_building_the_parser_loads_no_command() -> None:
    """``autoscaler run`` must not pay for the backtest's or the service's imports to read its flags."""
    code = (
        "import sys; from autoscaler.cli import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.startswith(('aiohttp', 'yaml', 'kubernetes_asyncio', "
        "'autoscaler.service', 'autoscaler.kube', 'autoscaler.prometheus', 'kube_emulator', "
        "'autoscaler.simulate', 'autoscaler.convert', 'autoscaler.plot', 'autoscaler.core'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _assignments(path: Path) -> list[tuple[str, ast.expr]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (target.id, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


def test_exit_codes_are_defined_once() -> None:
    """A command names its exit codes from autoscaler.cli.errors: a number is written down only there."""
    defined = {
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name, value in _assignments(path)
        if name.startswith("EXIT_") and isinstance(value, ast.Constant)
    }
    assert defined == {
        f"autoscaler/cli/errors.py: {name}"
        for name in (
            "EXIT_OK",
            "EXIT_FAILED",
            "EXIT_INVALID",
            "EXIT_INCOMPLETE",
            "EXIT_BROKEN_PIPE",
            "EXIT_INTERRUPTED",
        )
    }


def test_no_argparse_internals() -> None:
    users = [
        str(path) for path in PACKAGE.rglob("*.py") if "_negative_number_matcher" in path.read_text(encoding="utf-8")
    ]
    assert users == []
