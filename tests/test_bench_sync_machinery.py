"""``bench/sync_machinery.py`` runs the service's own scheduling classes and reports both structures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "sync_machinery.py"


def test_a_short_run_counts_syncs_of_both_structures() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--targets", "200", "--namespaces", "4", "--period", "0.3", "--periods", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = re.findall(r"^(per-target|per-namespace)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+$", done.stdout, re.MULTILINE)
    assert [mode for mode, _, _ in rows] == ["per-target", "per-namespace"], done.stdout
    for _, syncs, per_sync in rows:
        # Every target syncs on its namespace's ticks, once a period ± the jitter: in two periods, each
        # namespace's tick comes one to three times.
        assert 200 <= int(syncs) <= 600, done.stdout
        assert float(per_sync) > 0, done.stdout
