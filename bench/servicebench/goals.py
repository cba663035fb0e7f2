"""The goals a run must meet (issue 13: 10,000 targets on one core), checked figure by figure.

A goal holds per service process: with label shards, each shard's own figures against its own share of the
targets. A missed goal is a problem of the run, and the benchmark exits 1."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from autoscaler.service.app import SHUTDOWN_SECONDS
from servicebench.window import Window

LOOP_LAG_P99_S = 0.1
SCHEDULE_LAG_P99_S = 2.0
MCPU_PER_1000 = 20.0
RSS_MIB_PER_1000 = 40.0
FIRST_PASS_S = 60.0
SCRAPE_CPU_S = 0.1
QUERIES_PER_PERIOD = 25.0  # batched per namespace: independent of the number of targets (50 namespaces here)
# The goals per 1,000 targets hold from this many targets on: below, the service's own fixed cost (its idle
# CPU alone is ~3 mCPU, 54 per 1,000 at 50 targets) is what they would measure, not its cost per target.
PER_1000_FROM = 1000
SYNCS_SHORT_SHARE = 0.03  # the syncs a window may lack in any run, as a share of those its periods hold


def fewest_syncs(targets_by_namespace: Collection[int], periods: float) -> float:
    """The fewest syncs a window of ``periods`` periods may count for targets spread over namespaces as
    given, when no target misses a tick. A namespace's targets sync together on its ticks, so where the
    window's two ends fall among a namespace's jittered ticks moves all of its syncs by one tick each way
    (two end effects of variance ≤ 1/4 each). The bound is the smaller of 97 % of the periods' syncs and
    three standard deviations of that spread below them: a few targets in many namespaces (the quick run's
    one per namespace over two periods) count a few percent less by chance, many in each do not."""
    expected = sum(targets_by_namespace) * periods
    spread = 3 * math.sqrt(sum(n * n for n in targets_by_namespace) * 0.5)
    return expected - max(SYNCS_SHORT_SHARE * expected, spread)


@dataclass(frozen=True)
class Check:
    figure: str
    value: str
    goal: str
    met: bool  # True for a goal not checked
    checked: bool = True


def checks(service: dict[str, Any], period: float, idle: dict[str, Any] | None) -> list[Check]:
    """Every goal for one service's figures (see run.measure for the keys)."""
    w: Window = service["steady"]
    per_k = 1000 / service["targets"]
    out = [
        Check(
            "event-loop lag p99",
            f"{w.loop_lag.quantile(0.99) * 1000:.0f} ms",
            "< 100 ms",
            w.loop_lag.quantile(0.99) < LOOP_LAG_P99_S,
        ),
        Check(
            "sync duration p99",
            f"{w.reconcile.quantile(0.99):.2f} s",
            f"< the period ({period:g} s)",
            w.reconcile.quantile(0.99) < period,
        ),
        Check("Leases lost", str(service["lease"]["losses"]), "0", service["lease"]["losses"] == 0),
        Check(
            "scheduling lag p99", f"{w.lag.quantile(0.99):.2f} s", "< 2 s", w.lag.quantile(0.99) < SCHEDULE_LAG_P99_S
        ),
        per_1000(
            "service CPU per 1,000 targets",
            f"{w.mcpu(w.service_cpu) * per_k:.1f} mCPU",
            "≤ 20 mCPU",
            w.mcpu(w.service_cpu) * per_k <= MCPU_PER_1000,
            service["targets"],
        ),
        Check(
            "start-up: spawn → its targets all synced once",
            f"{service['startup']['first_pass_s']:.1f} s",
            "< 60 s",
            service["startup"]["first_pass_s"] < FIRST_PASS_S,
        ),
        Check(
            "one /metrics scrape",
            f"{service['scrape']['cpu_s'] * 1000:.0f} ms CPU",
            "< 100 ms CPU",
            service["scrape"]["cpu_s"] < SCRAPE_CPU_S,
        ),
        Check(
            "Prometheus queries per period",
            f"{w.per_period(w.service_queries):.1f}",
            "≤ 25 (flat in targets)",
            w.per_period(w.service_queries) <= QUERIES_PER_PERIOD,
        ),
        Check("LIST calls per steady period", f"{w.per_period(w.lists):.2f}", "0", w.lists == 0),
        Check(
            "writes per steady period (Lease excluded)",
            f"{w.per_period(sum(w.writes.values()) - w.lease_writes):.2f}",
            "0",
            sum(w.writes.values()) - w.lease_writes == 0,
        ),
    ]
    shutdown, source = service.get("shutdown_s"), service.get("shutdown_from")  # ServiceProcess.shutdown_figure
    shown = "not measured" if shutdown is None else f"{shutdown:.2f} s" + ("" if source == "log" else f" ({source})")
    out.append(
        Check(
            "graceful shutdown (SIGTERM → stopped)",
            shown,
            f"< {SHUTDOWN_SECONDS:g} s (its own budget)",
            shutdown is not None and shutdown < SHUTDOWN_SECONDS,
        )
    )
    if idle is not None:
        above = (w.rss_kib_end / 1024 - idle["rss_mib"]) * per_k
        out.append(
            per_1000(
                "RSS above idle per 1,000 targets",
                f"{above:.1f} MiB",
                "≤ 40 MiB",
                above <= RSS_MIB_PER_1000,
                service["targets"],
            )
        )
    return out


def per_1000(figure: str, value: str, goal: str, met: bool, targets: int) -> Check:
    """A goal per 1,000 targets: checked from :data:`PER_1000_FROM` targets on."""
    if targets >= PER_1000_FROM:
        return Check(figure, value, goal, met)
    return Check(figure, value, f"{goal} (not checked below {PER_1000_FROM:,} targets)", True, checked=False)
