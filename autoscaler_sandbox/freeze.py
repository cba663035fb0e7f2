"""Freezing a process for a fault test: SIGSTOP, and waiting until it has really stopped.

``kill(pid, SIGSTOP)`` returns when the signal is queued, not when the process is stopped: a thread running
on another core finishes its time slice first, and a server can answer a request that arrived a moment
after the signal was sent. A test that asserts "nothing answers" must wait for every thread to stop."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["freeze", "thaw"]

_NOT_RUNNING = frozenset("TtZX")  # stopped, traced, zombie, dead: /proc/<pid>/task/<tid>/stat


def freeze(pid: int, *, timeout: float = 5.0) -> None:
    """SIGSTOP ``pid`` and return once every one of its threads is stopped (Linux' /proc)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not _all_stopped(pid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} did not stop within {timeout}s of SIGSTOP")
        time.sleep(0.001)


def thaw(pid: int) -> None:
    os.kill(pid, signal.SIGCONT)


def _all_stopped(pid: int) -> bool:
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():  # no /proc (not Linux): the signal is all we can do
        return True
    for task in tasks.iterdir():
        try:
            stat = (task / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread exited meanwhile
        state = stat[stat.rindex(")") + 2]
        if state not in _NOT_RUNNING:
            return False
    return True
