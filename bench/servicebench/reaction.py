"""Reaction time (issue 41, item 3): from the first scrape that carries a step of load to the scale write.

After the steady window the harness steps the request rate of a sample of targets' pods (every pod of each) from
``REQUESTS_PER_POD`` to ``factor`` times it, at one instant T, each counter continuous at T
(:meth:`MetricsExporter.change_rates`): a counter that jumped would read, through ``rate()``, as a burst. The step
is made right after a scrape, so the next scrape (the first whose samples are at or after T: the exporter keeps its
renders' times, which are the samples' timestamps Prometheus stores) carries a whole scrape interval of the new
rate. Per sampled target, the reaction is the time from that scrape to the first ``patch deployments/scale``
(autoscaler/kube/scale.py writes replicas so) the emulator answered 2xx, read from its request log as it grows.
The service reads each target once a period on its namespace's tick, so the goal is a period and 2 s at p99.

The arithmetic of the first scrape: ``rate(x[2m])`` is the mean slope between the window's first and last samples
(extrapolated to its ends), so ``c`` seconds of the new rate at the end of a window of ``w`` seconds lift it by at
least ``(factor - 1) × c / w``: ×2 over one 15 s scrape, ``1 + 15/120 = 1.125``, past the 10 % tolerance, and the
target's next sync proposes ``ceil(10 × 1.125) = 12`` replicas of 10 (more if it syncs after later scrapes). With
a 1 s scrape one interval lifts it by only ``(factor - 1) / 120``: the step must be ×13 or more
(:func:`least_factor`) for the first scrape to matter.

Each sampled target's rate goes back to ``REQUESTS_PER_POD`` (continuous again) once its write is seen, the
missed ones' at the end of the wait; their Deployments keep the replicas written, and the result names the sample
(``sampled``) so the run's checks leave it out (``writes_again``: the sample's writes after its first, in the wait).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import Counter
from typing import Any

from autoscaler_sandbox import MetricsExporter
from kube_emulator import KubeEmulator
from kube_emulator.requestlog import RequestRecord
from servicebench.cluster import REQUESTS_PER_POD, Workload
from servicebench.window import Harness

REQUESTS = "http_requests_total"
WINDOW_S = 120.0  # the Pods metric's rate() window (cluster.PODS_QUERY)
TOLERANCE = 0.1  # the service's default
GOAL_MARGIN_S = 2.0  # the goal: p99 within a period and this


def choose(plan: list[Workload], sample: int) -> list[Workload]:
    """``sample`` targets spread evenly over the plan taken namespace by namespace: the service schedules by
    namespace (every namespace's targets on one tick), so the sample covers the namespaces and with them the
    ticks' phases (``layout`` deals targets round robin over namespaces: every k-th in its order could all be
    of one namespace)."""
    by_namespace = sorted(range(len(plan)), key=lambda i: (plan[i].namespace, i))
    count = min(max(sample, 0), len(plan))
    stride = len(plan) / count if count else 0.0
    return [plan[by_namespace[int((j + 0.5) * stride)]] for j in range(count)]


def least_factor(scrape_interval: float, window: float = WINDOW_S, tolerance: float = TOLERANCE) -> float:
    """The step for which one scrape interval of the new rate lifts ``rate(x[window])`` just to the tolerance:
    a larger one makes the first scrape carrying it a change the service must act on."""
    return 1.0 + tolerance * window / scrape_interval


def step_ratio(factor: float, carried: float, window: float = WINDOW_S) -> float:
    """The least ``rate(x[window])`` relative to the old rate once ``carried`` seconds of ``factor`` times the old
    rate end the window (the mean slope over at most ``window`` seconds between its first and last samples)."""
    return 1.0 + (factor - 1.0) * max(carried, 0.0) / window


def proposal(pods: int, ratio: float, max_replicas: int, tolerance: float = TOLERANCE) -> int:
    """The replicas a Pods AverageValue metric at ``ratio`` times its target asks of ``pods`` pods."""
    if abs(ratio - 1.0) <= tolerance:
        return pods
    return min(math.ceil(pods * ratio - 1e-9), max_replicas)


def percentile(ordered: list[float], q: float) -> float | None:
    """The nearest-rank percentile (the least value with at least ``q`` of the values at or under it) of sorted
    values; None for none."""
    if not ordered:
        return None
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def histogram(values: list[float], width: float, upper: float) -> list[dict[str, float | int | None]]:
    """Counts in ``width``-wide buckets from 0 to ``upper`` (every bucket, empty ones too: runs compare bucket by
    bucket), then one from ``upper`` up (``to`` None) and, only if a value is negative, one below 0 (``from``
    None) first."""
    edges = [round(i * width, 9) for i in range(math.ceil(upper / width) + 1)]
    buckets: list[dict[str, float | int | None]] = []
    below = sum(1 for v in values if v < 0)
    if below:
        buckets.append({"from": None, "to": 0.0, "count": below})
    for lo, hi in itertools.pairwise(edges):
        buckets.append({"from": lo, "to": hi, "count": sum(1 for v in values if lo <= v < hi)})
    buckets.append({"from": edges[-1], "to": None, "count": sum(1 for v in values if v >= edges[-1])})
    return buckets


class ScaleWrites:
    """The scale writes the emulator answered 2xx, from its request log's records newer than this reader (read
    as the log grows, as window.StatusWrites does): namespace/name → when the first began (monotonic)."""

    def __init__(self, emu: KubeEmulator) -> None:
        self._log = emu.requests
        self._read = self._log.started  # only what comes after: the step's writes
        self._unfinished: list[RequestRecord] = []

    def update(self) -> list[tuple[str, float]]:
        log = self._log
        new = min(log.started - self._read, len(log.records))
        self._read = log.started
        records = [*self._unfinished, *reversed(list(itertools.islice(reversed(log.records), new)))]
        self._unfinished = []
        written = []
        for record in records:
            if record.verb not in ("patch", "update") or record.resource not in ("deployments/scale", "deployments"):
                continue
            if record.status is None:
                self._unfinished.append(record)
            elif 200 <= record.status < 300:
                written.append((f"{record.info.namespace}/{record.info.name}", record.started))
        return written


async def reaction(
    h: Harness,
    exporter: MetricsExporter,
    plan: list[Workload],
    sample: int,
    factor: float = 2.0,
    timeout_periods: int = 4,
    *,
    window: float = WINDOW_S,
    tolerance: float = TOLERANCE,
) -> dict[str, Any]:
    """The reaction phase (see the module): step ``sample`` targets' load by ``factor``, time each one's first
    scale write from the first scrape carrying the step, wait at most ``timeout_periods`` periods, then put their
    load back. ``window``: the Pods metric's rate() window, for the expected ratio."""
    period = float(h.args.period)
    scrape_interval = float(h.args.scrape_interval)
    chosen = choose(plan, sample)
    keys = {f"{w.namespace}/{w.name}": w for w in chosen}
    series = {key: [{"namespace": w.namespace, "pod": pod} for pod in w.pods] for key, w in keys.items()}
    wall_minus_monotonic = time.time() - time.monotonic()  # one offset: the request log's times are monotonic

    # Right after a scrape, so that the next one carries a whole interval of the new rate.
    last = exporter.renders[-1] if exporter.renders else None
    waited = time.monotonic() + 3 * scrape_interval + 10
    while (exporter.renders[-1] if exporter.renders else None) == last:
        if time.monotonic() > waited:
            raise SystemExit(f"nothing scraped the exporter for {3 * scrape_interval + 10:g} s")
        await asyncio.sleep(0.005)
    writes = ScaleWrites(h.emu)
    stepped = [labels for pods in series.values() for labels in pods]
    step_at = await asyncio.to_thread(exporter.change_rates, REQUESTS, stepped, factor * REQUESTS_PER_POD)

    written: dict[str, tuple[float, int]] = {}  # key → (wall time of the write, replicas then)
    others: Counter[str] = Counter()  # scale writes of targets outside the sample (steady ones: none expected)
    again = 0  # sampled targets' writes after their first (the step not yet taken back)
    deadline = step_at + 2 * scrape_interval + timeout_periods * period
    while len(written) < len(keys) and time.time() < deadline:
        await asyncio.sleep(0.1)
        reacted = []
        for key, began in writes.update():
            wall = began + wall_minus_monotonic
            if key not in keys:
                others[key] += 1
            elif key in written:
                again += 1
            elif wall >= step_at:
                w = keys[key]
                deployment = h.emu.get("deployments", w.name, w.namespace) or {}
                written[key] = (wall, int((deployment.get("spec") or {}).get("replicas", -1)))
                reacted.append(key)
        if reacted:
            # Each target's load back as soon as it reacted: by then its rate() window holds about a period of the
            # step (a 15 s period at ×2: within the replicas it asked for), so it asks for nothing more after;
            # stepped until the last target reacted, the first ones' windows would grow and ask again.
            back = [labels for key in reacted for labels in series[key]]
            await asyncio.to_thread(exporter.change_rates, REQUESTS, back, REQUESTS_PER_POD)
    missed = sorted(set(keys) - set(written))
    back = [labels for key in missed for labels in series[key]]
    restored_at = await asyncio.to_thread(exporter.change_rates, REQUESTS, back, REQUESTS_PER_POD)

    # A copy first: the exporter's thread appends to the deque, and iterating one that grows raises.
    first_scrape = next((at for at in list(exporter.renders) if at >= step_at), None)
    reactions = sorted(wall - first_scrape for wall, _ in written.values()) if first_scrape is not None else []
    after_step = sorted(wall - step_at for wall, _ in written.values())
    carried = (first_scrape - step_at) if first_scrape is not None else 0.0
    pods = len(chosen[0].pods) if chosen else 0
    ratio = step_ratio(factor, carried, window)
    goal = period + GOAL_MARGIN_S
    p99 = percentile(reactions, 0.99)
    slowest = sorted(written, key=lambda k: written[k][0], reverse=True)[:5]
    return {
        "sample": len(keys),
        "sampled": sorted(keys),
        "factor": factor,
        "period": period,
        "scrape_interval": scrape_interval,
        "window_s": window,
        "step_at": step_at,
        "first_scrape_at": first_scrape,
        "first_scrape_carried_s": carried,
        "expected_ratio": ratio,
        "past_tolerance": ratio > 1.0 + tolerance,
        "expected_proposal": proposal(pods, ratio, 3 * pods, tolerance),
        "pods": pods,
        "restored_at": restored_at,
        "reactions_s": reactions,
        "after_step_s": after_step,
        "p50": percentile(reactions, 0.5),
        "p90": percentile(reactions, 0.9),
        "p99": p99,
        "max": reactions[-1] if reactions else None,
        "replicas": dict(sorted(Counter(replicas for _, replicas in written.values()).items())),
        "slowest": [
            {
                "target": k,
                "reaction_s": written[k][0] - first_scrape if first_scrape is not None else None,
                "replicas": written[k][1],
            }
            for k in slowest
        ],
        "missed": missed,
        "other_writes": dict(others),
        "writes_again": again,
        "goal_s": goal,
        "met": bool(reactions) and not missed and p99 is not None and p99 <= goal,
        "histogram": histogram(reactions, 1.0, 2 * period),
    }


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"


def reaction_report(result: dict[str, Any]) -> list[str]:
    """The reaction phase's section of the report."""
    period, goal = result["period"], result["goal_s"]
    lines = [
        f"**reaction time** (the request rate of {result['sample']} targets' pods ×{result['factor']:g} at one "
        f"instant, right after a scrape; from the first scrape carrying it to each target's scale write)",
        "",
        f"- the first scrape carried {result['first_scrape_carried_s']:.2f} s of the new rate: rate(…"
        f"[{result['window_s']:g}s]) at least ×{result['expected_ratio']:.3f} of its target, "
        + (
            f"past the tolerance: a sync then proposes {result['expected_proposal']} replicas of {result['pods']} "
            "(more after later scrapes)"
            if result["past_tolerance"]
            else "inside the tolerance: the reaction times include the scrapes until the step shows (a larger "
            "--reaction factor, or a longer scrape interval, makes the first scrape count)"
        ),
        f"- p50 {_seconds(result['p50'])}, p90 {_seconds(result['p90'])}, p99 {_seconds(result['p99'])}, "
        f"max {_seconds(result['max'])}; goal p99 ≤ {goal:g} s (the {period:g} s period + {GOAL_MARGIN_S:g} s): "
        + ("met" if result["met"] else "**missed**"),
        "- replicas asked at the first write: "
        + (", ".join(f"{r} ({n} target{'s' * (n != 1)})" for r, n in result["replicas"].items()) or "none"),
    ]
    if result["writes_again"]:
        lines.append(f"- the sample's scale writes after its first (step not yet undone): {result['writes_again']}")
    if result["missed"]:
        lines.append(
            f"- **{len(result['missed'])} targets never written** within the wait "
            f"(e.g. {', '.join(result['missed'][:5])})"
        )
    if result["other_writes"]:
        others = result["other_writes"]
        lines.append(
            f"- scale writes of targets outside the sample (steady, none expected): {sum(others.values())} "
            f"(e.g. {', '.join(list(others)[:3])})"
        )
    shown = [b for b in result["histogram"] if b["count"]]
    if shown:
        first, last = result["histogram"].index(shown[0]), result["histogram"].index(shown[-1])
        lines += ["", "| reaction (s) | targets |", "|---|---|"]
        for bucket in result["histogram"][first : last + 1]:
            lo, hi = bucket["from"], bucket["to"]
            label = f"< {hi:g}" if lo is None else f"≥ {lo:g}" if hi is None else f"{lo:g}–{hi:g}"
            lines.append(f"| {label} | {bucket['count']} |")
    return lines
