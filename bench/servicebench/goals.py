"""The goals a run must meet (issue 13: 10,000 targets on one core), checked figure by figure.

A goal holds per service process: with label shards, each shard's own figures against its own share of the
targets. A missed goal is a problem of the run, and the benchmark exits 1."""

from __future__ import annotations

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


@dataclass(frozen=True)
class Check:
    figure: str
    value: str
    goal: str
    met: bool


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
        Check(
            "service CPU per 1,000 targets",
            f"{w.mcpu(w.service_cpu) * per_k:.1f} mCPU",
            "≤ 20 mCPU",
            w.mcpu(w.service_cpu) * per_k <= MCPU_PER_1000,
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
        out.append(Check("RSS above idle per 1,000 targets", f"{above:.1f} MiB", "≤ 40 MiB", above <= RSS_MIB_PER_1000))
    return out
