"""The code stays ruff-, ruff-format- and mypy-clean (all configured in pyproject.toml), in small modules."""

import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    """One hand style: `ruff format .` would change nothing."""
    result = run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


# A review flag, not a gate: a module past this length is worth a look (does it hold two concepts?), and
# the answer may be that it is one concept, whole. Splitting by size alone scatters a concept over files.
REVIEW_LINES = 300


class LongModules(UserWarning):
    """The modules over REVIEW_LINES lines, named for a reviewer; never a failure."""


def module_lines() -> dict[str, int]:
    """Every Python module of the repository (the packages, tests, benchmarks, scripts), by path from the
    root, and its number of lines."""
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(ROOT.rglob("*.py"))
        if not {".venv", "build", ".git"} & set(path.relative_to(ROOT).parts)
    }


def long_modules(lines: dict[str, int]) -> dict[str, int]:
    """The modules over REVIEW_LINES lines, longest first."""
    over = [(path, count) for path, count in lines.items() if count > REVIEW_LINES]
    return dict(sorted(over, key=lambda item: (-item[1], item[0])))


def review_flag(over: dict[str, int]) -> str:
    listed = "\n".join(f"  {path}: {count} lines" for path, count in over.items())
    return f"{len(over)} modules over {REVIEW_LINES} lines, worth a look in review (one concept each?):\n{listed}"


def test_long_modules_are_named_for_review() -> None:
    """Small modules a reader finds by concept: the ones over REVIEW_LINES lines (as `ruff format` leaves
    them, which test_ruff_format keeps) are named in the run's warnings summary; the build does not fail on
    them. It fails only when the modules cannot be read, as then the list would say nothing."""
    lines = module_lines()
    assert "autoscaler/core/sync.py" in lines, "the repository's modules were not found"
    assert lines["autoscaler/core/sync.py"] > 0, "the modules' lines were not read"
    over = long_modules(lines)
    if over:
        warnings.warn(LongModules(review_flag(over)), stacklevel=1)


def test_the_flag_names_every_long_module_and_only_those() -> None:
    over = long_modules({"a.py": REVIEW_LINES + 1, "b.py": REVIEW_LINES, "c.py": 2 * REVIEW_LINES})
    assert list(over) == ["c.py", "a.py"]
    flag = review_flag(over)
    assert f"c.py: {2 * REVIEW_LINES} lines" in flag and f"a.py: {REVIEW_LINES + 1} lines" in flag
    assert "b.py" not in flag
