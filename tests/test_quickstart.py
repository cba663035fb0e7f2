"""The README's Quick start, run as a newcomer runs it: on a fresh copy of the repository, by the system's own
``python3`` (on Debian and Ubuntu locked by PEP 668: ``pip install`` outside a virtual environment fails with
``externally-managed-environment``), with nothing of this suite's virtual environment on the PATH.

The commands are read from the README's first code block, so README and test cannot drift: the lines before
``autoscaler demo`` are the set-up, that line is the demo (run here with ``--quiet --speed 60``: the whole
curve in about 12 s), the line after it the test command, which ``.ci/run`` must end with word for word (the
test command is run here with ``--collect-only``: every test module imports, with every plugin the suite
uses, in the environment the set-up made; running the suite inside itself would take minutes).

Its cost is the set-up's ``pip install`` (about 30 s from pip's cache, which ``.ci/run``'s own install has
just filled) and the demo's 12 s."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.guard import REQUIRE_SERVERS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
# The directories a fresh Debian or Ubuntu machine's PATH holds: no pyenv, no virtual environment.
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# What a build, a run or the tests leave in a tree (.gitignore's entries), which a fresh clone has none of.
NOT_IN_A_CLONE = (
    ".git",
    ".venv",
    "build",
    "dist",
    "__pycache__",
    "*.pyc",
    "*.so",
    "*.whl",
    "*.egg-info",
    ".hypothesis",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
)
# Generous: pip and a 12-second demo on a loaded 2-core machine.
DEADLINE_SECONDS = 900


@dataclass(frozen=True)
class QuickStart:
    setup: list[str]
    demo: str
    tests: str


def quick_start(readme: str) -> QuickStart:
    """The Quick start section's first ``sh`` block: set-up lines, then ``autoscaler demo``, then the tests."""
    section = re.search(r"^## Quick start\n(.*?)(?=^## )", readme, re.S | re.M)
    assert section, "README.md has no '## Quick start' section"
    block = re.search(r"^```sh\n(.*?)^```", section.group(1), re.S | re.M)
    assert block, "the Quick start has no ```sh block"
    lines = [line.strip() for line in block.group(1).splitlines() if line.strip()]
    demo = [i for i, line in enumerate(lines) if shlex.split(line)[:2] == ["autoscaler", "demo"]]
    assert len(demo) == 1, f"the Quick start should run 'autoscaler demo' once: {lines}"
    after = lines[demo[0] + 1 :]
    assert len(after) == 1, f"the Quick start's test command should follow the demo, and end the block: {lines}"
    return QuickStart(setup=lines[: demo[0]], demo=lines[demo[0]], tests=after[0])


def ci_commands() -> list[str]:
    """``.ci/run``'s command lines (comments and blank lines left out)."""
    lines = [line.strip() for line in CI_RUN.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def system_python() -> Path:
    """The interpreter a fresh machine's ``python3`` is: Debian's or Ubuntu's where there is one, else the one
    this suite's virtual environment was made from."""
    debian = Path("/usr/bin/python3")
    if debian.is_file() and _version(debian) >= (3, 11):
        return debian
    return Path(sys.base_prefix) / "bin" / "python3"


def _version(python: Path) -> tuple[int, int]:
    answer = subprocess.run(
        [str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=60
    )
    major, minor = answer.stdout.split() if answer.returncode == 0 else ("0", "0")
    return int(major), int(minor)


def _makes_virtual_environments(python: Path) -> bool:
    """Whether ``python -m venv`` works: Debian keeps ensurepip, which it needs, in ``python3-venv``."""
    probe = subprocess.run([str(python), "-c", "import ensurepip, venv"], capture_output=True, timeout=60)
    return probe.returncode == 0


def fresh_copy(destination: Path) -> Path:
    """What a fresh clone of this working tree holds: tracked files (as edited) and new, not ignored ones;
    never the suite's ``.venv``, build output or modules compiled in place (``*.so`` is ignored). Outside a
    git checkout (an unpacked archive), the tree without what a build or a run leaves in it."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        shutil.copytree(ROOT, destination, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
        return destination
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.is_file():
            continue  # deleted in the working tree, not yet committed
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return destination


def newcomer_environment(home: Path) -> dict[str, str]:
    """This process's environment as a fresh machine's shell has it: ``python3`` is the system interpreter,
    and nothing points into this suite's virtual environment or tells the code it runs in CI."""
    shim = home / "system-bin"
    shim.mkdir()
    (shim / "python3").symlink_to(system_python())
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "CONDA_PREFIX")
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in dropped and not name.startswith(("AUTOSCALER_", "PYENV_", "PYTEST_"))
    }
    environment["PATH"] = os.pathsep.join((str(shim), *SYSTEM_PATH))
    return environment


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """On the checkout as the README installs it (the interpreted build), as a line of its own at the top level
    of the script; the compiled build's run after it is in a copy (.ci/run)."""
    script = CI_RUN.read_text()
    readme_command = quick_start(README.read_text()).tests
    assert readme_command in script.splitlines(), f"{readme_command!r} is not a line of its own in .ci/run"
    assert readme_command in ci_commands()


def test_the_readme_makes_a_virtual_environment_before_it_installs() -> None:
    """Debian's and Ubuntu's system Python refuses ``pip install`` (PEP 668): the set-up must make and enter a
    virtual environment before its first ``pip install``."""
    setup = " && ".join(quick_start(README.read_text()).setup)
    assert "pip install" in setup, setup
    before_pip = setup[: setup.index("pip install")]
    assert "-m venv .venv" in before_pip and ". .venv/bin/activate" in before_pip, setup


def test_system_python_here_is_the_locked_one_a_newcomer_meets() -> None:
    """Where the system interpreter is Debian's, it is PEP 668-locked: the quick start below is then run under
    exactly the condition that broke it."""
    python = system_python()
    if python != Path("/usr/bin/python3"):
        pytest.skip(f"no Debian or Ubuntu python3 here; the quick start runs with {python}")
    stdlib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert (Path(stdlib) / "EXTERNALLY-MANAGED").is_file(), f"{python} is not PEP 668-locked"


def test_the_readme_quick_start_works_on_a_fresh_copy_with_the_system_python(tmp_path: Path) -> None:
    steps = quick_start(README.read_text())
    if not _makes_virtual_environments(system_python()):
        # As the README says: Debian's python3 needs the python3-venv package (.ci/run installs it).
        message = f"{system_python()} cannot make a virtual environment (Debian package 'python3-venv')"
        if REQUIRE_SERVERS:
            pytest.fail(f"{message}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping")
        pytest.skip(message)
    clone = fresh_copy(tmp_path / "autoscaler")
    script = "\n".join(
        [
            "set -euo pipefail",
            *steps.setup,
            "echo \"base-prefix: $(python3 -c 'import sys; print(sys.base_prefix)')\"",
            "echo \"imported-from: $(python3 -c 'import autoscaler; print(autoscaler.__file__)')\"",
            f"{steps.demo} --quiet --speed 60",
            f"{steps.tests} --collect-only -q -n 0 -p no:cacheprovider",
        ]
    )
    environment = newcomer_environment(tmp_path)
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=clone,
        env=environment,
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"the quick start failed ({done.returncode}):\n{script}\n---\n{output[-6000:]}"
    system_prefix = subprocess.run(
        [str(system_python()), "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    # The set-up's environment was made from the system interpreter, and holds the fresh copy, not this tree.
    assert f"base-prefix: {system_prefix}\n" in done.stdout, output[-3000:]
    assert f"imported-from: {clone}/autoscaler/__init__.py\n" in done.stdout, output[-3000:]
    assert "Summary: ran 12:00 of demo time" in done.stdout, output[-3000:]
    assert re.search(r"^\d+ tests collected", done.stdout, re.M), output[-3000:]
