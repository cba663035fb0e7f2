"""How fast the service's CPUs are when a run starts and when it ends: a fixed workload, timed.

This benchmark's machine is a VM whose speed moves between runs (the same code measured 42 and 49 mCPU per
1,000 targets an hour apart, docs/benchmarks-history.md): a figure near its goal needs to say how fast the machine was.
The reference workload is the service's kind of work in plain Python — decoding a JSON answer of 20,000
series, walking its dicts into tuples and summing — run in a process of its own on the service's CPUs while
no service runs there (before the first starts, after the last stops). Lower is faster; the figures of two
runs compare in the ratio of their reference times.
"""

from __future__ import annotations

import os
import subprocess
import sys

_WORKLOAD = r"""
import json, time
answer = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"namespace": f"team-{i % 50:03d}", "pod": f"svc-{i // 10:04d}-{i:05d}", "container": "app"},
     "value": [1764248400.123, f"0.{i:09d}"]} for i in range(20000)]}})
best = float("inf")
for _ in range(5):
    started = time.process_time()
    for _ in range(3):
        series = json.loads(answer)["data"]["result"]
        rows = [(s["metric"]["namespace"], s["metric"]["pod"], float(s["value"][1])) for s in series]
        by_pod = {}
        for namespace, pod, value in rows:
            by_pod[(namespace, pod)] = by_pod.get((namespace, pod), 0.0) + value
        sum(by_pod.values())
    best = min(best, time.process_time() - started)
print(best)
"""


def reference_ms(cpus: set[int] | None) -> float:
    """The reference workload's CPU time (the best of five rounds), in ms, on ``cpus`` (None: anywhere)."""
    done = subprocess.run(
        [sys.executable, "-c", _WORKLOAD],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    return float(done.stdout.strip()) * 1000
