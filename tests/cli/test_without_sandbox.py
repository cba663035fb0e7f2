"""Where only the product is installed (the container image), the two demo commands say what is missing
and where it comes from, and every other command works as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Python as the image has it: the test machinery cannot be imported (an import hook refuses it, as a
# missing package would).
WITHOUT_SANDBOX = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("autoscaler_sandbox", "kube_emulator"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from autoscaler.cli import main
sys.exit(main(sys.argv[1:]))
"""


def autoscaler(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SANDBOX, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "command"),
    [(("demo",), "demo"), (("backtest", "--demo"), "backtest"), (("backtest", "--demo-day"), "backtest")],
)
def test_a_demo_without_the_sandbox_says_where_it_comes_from(args: tuple[str, ...], command: str) -> None:
    result = autoscaler(*args)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"autoscaler {command}: "), result.stderr
    assert "the packages autoscaler_sandbox and kube_emulator) is not installed" in result.stderr
    assert "pip install -e . in a clone" in result.stderr and "Traceback" not in result.stderr


def test_the_other_commands_need_no_sandbox(tmp_path: Path) -> None:
    result = autoscaler("simulate", str(ROOT / "config" / "scenarios" / "quickstart.yaml"))
    assert result.returncode == 0, result.stderr
    assert autoscaler("--help").returncode == 0
