"""freeze() returns only once every thread of the process has stopped: a test that asserts "nothing
answers" right after it cannot be raced by a thread still finishing its time slice on another core."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoscaler_sandbox.freeze import freeze, thaw

# Four threads spinning on the CPU: the case where SIGSTOP's delivery lags its sending.
_SPINNER = """
import threading
def spin():
    while True:
        pass
for _ in range(3):
    threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
spin()
"""


def _states(pid: int) -> list[str]:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        states.append(stat[stat.rindex(")") + 2])
    return states


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_freeze_waits_until_every_thread_is_stopped_and_thaw_resumes_them() -> None:
    process = subprocess.Popen([sys.executable, "-c", _SPINNER], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        for _ in range(20):  # each round can race; none may
            freeze(process.pid)
            states = _states(process.pid)
            assert len(states) >= 4 and set(states) == {"T"}, states
            thaw(process.pid)
        freeze(process.pid)
        ticks = _cpu_ticks(process.pid)
        time.sleep(0.3)
        assert _cpu_ticks(process.pid) == ticks  # stopped means no CPU at all
        thaw(process.pid)
        deadline = time.monotonic() + 5
        while _cpu_ticks(process.pid) == ticks:
            assert time.monotonic() < deadline, "the threads did not run again after thaw"
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait()
