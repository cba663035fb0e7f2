"""The benchmark's report: for each service process (one, or one per label shard), its figures and the goals
they meet or miss; then the checks of the whole run. And the same as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.core.settings import DEFAULT_SETTINGS
from autoscaler.prometheus.settings import DEFAULT_TIMEOUT_SECONDS
from servicebench.brownout import episode_report
from servicebench.peers import peers_report
from servicebench.reaction import reaction_report
from servicebench.window import Window


def verbs(api: Mapping[str, float], per: float) -> str:
    parts = [f"{k} {v / per:.2f}" for k, v in sorted(api.items())]
    return ", ".join(parts) if parts else "none"


def report(result: dict[str, Any]) -> str:
    n = result["targets"]
    services = result["services"]
    w0: Window = services[0]["steady"]
    shards = f"; {len(services)} label shards (by {result.get('shard_by', 'target')})" if len(services) > 1 else ""
    lines = [
        f"Service benchmark: {n:,} targets × {result['pods']} pods ({n * result['pods']:,} pods) in "
        f"{result['namespaces']} namespaces, 2 metrics each; sync period {result['period']:g} s; "
        f"steady window {w0.seconds:.1f} s = {w0.periods:.2f} periods{shards}"
        + (f"; overrides {result['overrides']}" if result["overrides"] else ""),
    ]
    if result.get("speed_ms"):
        lines.append(
            "machine speed (servicebench/speed.py: a fixed workload on the service's CPUs, lower is faster): "
            + " before, ".join(f"{ms:.0f} ms" for ms in result["speed_ms"])
            + (" after" if len(result["speed_ms"]) > 1 else "")
        )
    for service in services:
        lines += ["", *service_table(service, result)]
    for fault in result.get("faults", []):
        lines += ["", *episode_report(fault, result["period"], n)]
    if "reaction" in result:
        lines += ["", *reaction_report(result["reaction"])]
    if "peers" in result:
        lines += ["", *peers_report(result["peers"], result.get("service_reads"))]
    lines += ["", *environment_notes(result, w0)]
    exits = ", ".join(f"{s['name']} {s['exit_code']}" for s in services)
    lines.append(f"service exit codes: {exits}")
    passed = (
        "all passed (every target synced every period; no Deployment scaled; every target ScalingActive "
        "with 2 metrics and proposing its current count; no warnings in the logs; every goal met)"
    )
    lines.append("checks: " + ("; ".join(result["problems"]) if result["problems"] else passed))
    return "\n".join(lines)


# The scale-down stabilization window of the benchmark's targets (the controller's default; they set no
# behavior): a target's decision history keeps the recommendations of that long, so its memory grows until
# that long after its first sync.
SCALE_DOWN_WINDOW_S = DEFAULT_SETTINGS.downscale_stabilization_window


def environment_notes(result: dict[str, Any], w: Window) -> list[str]:
    """What the figures depend on besides the service: whether the decision histories were full when the RSS
    was measured (it grows until they are: 3,000 targets, 159 → 168 MiB over the first 20 periods, then
    flat; docs/benchmarks-history.md, the twentieth session), whether the harness's own CPUs (Prometheus,
    the emulator) kept up, and whether Prometheus answered within the service's deadline (``w``: the first
    service's window; the services share one Prometheus)."""
    after = result.get("settle", 0.0) + w.seconds
    full = after >= SCALE_DOWN_WINDOW_S
    notes = [
        f"RSS measured {after:.0f} s after the first full pass; the decision histories fill "
        f"{SCALE_DOWN_WINDOW_S:g} s after a target's first sync (the scale-down window)"
        + ("" if full else ": not yet, so the RSS is short of its steady state (a longer --periods or --settle)")
    ]
    cpus = result.get("others_cpus")
    if cpus:
        used = w.mcpu(w.prometheus_cpu) + w.mcpu(w.harness_cpu)
        notes.append(
            f"the harness's own CPUs ({cpus}: Prometheus, the emulator, the exporter): {used:.0f} mCPU used"
            + (
                " — saturated: their slow answers (queries past the timeout, slow writes) weigh on the "
                "service's figures; a longer --scrape-interval lightens Prometheus"
                if used >= 900 * cpus
                else ""
            )
        )
    deadline = result.get("query_deadline_s", DEFAULT_TIMEOUT_SECONDS)
    slowest = w.query_duration.quantile(0.99) if w.query_duration.count else 0.0
    if slowest > deadline:
        notes.append(
            f"Prometheus' answers: p99 {slowest:.1f} s, past the service's {deadline:g} s deadline "
            "(prometheus.timeoutSeconds): the failed metrics' status writes and Events follow from it "
            "(this Prometheus shares its CPUs with the emulator; --set prometheus.timeoutSeconds=…)"
        )
    return notes


def service_table(service: dict[str, Any], result: dict[str, Any]) -> list[str]:
    w: Window = service["steady"]
    n = service["targets"]
    per_k = 1000 / n
    s = service["startup"]
    title = f"**{service['name']}**" + (f" (shard {service['shard']}, {n:,} targets)" if service["shard"] else "")
    lines = [title, "", "| figure | value | goal |", "|---|---|---|"]

    def row(name: str, value: str, goal: str = "") -> None:
        lines.append(f"| {name} | {value} | {goal} |")

    for check in service["checks"]:
        row(check.figure, check.value + ("" if check.met else " **(missed)**"), check.goal)
    row(
        "scheduling lag p50 / mean",
        f"≈ {w.lag.quantile(0.5) * 1000:.1f} ms / {w.lag.sum / max(w.lag.count, 1) * 1000:.1f} ms "
        f"({w.lag.fraction_at_most(1.0) * 100:.2f} % ≤ 1 s)",
    )
    row("sync duration p50", f"≈ {w.reconcile.quantile(0.5) * 1000:.0f} ms")
    lease = service["lease"]
    row(
        "Lease renewals: late p99 / failed / late warnings",
        f"{w.renew_late.quantile(0.99) * 1000:.0f} ms (n={w.renew_late.count:.0f}) / "
        f"{lease['renew_failures']} / {lease['renew_late_warnings']}",
    )
    row(
        "syncs in window",
        f"{sum(w.reconciles.values()):.0f} ({verbs(w.reconciles, 1)})",
        f"≈ {n * w.counted_periods:.0f}",
    )
    row("service CPU (the process)", f"{w.mcpu(w.service_cpu):.1f} mCPU")
    row("its per-sync modules compiled (`autoscaler_build_info`)", w.compiled)
    row("service's cyclic GC runs in the window", verbs(w.gc_runs, 1))
    pauses = {g: h for g, h in w.gc_pauses.items() if h.count}
    if pauses:
        row(
            "service's GC pauses: mean / p99 bound / time in all",
            "; ".join(
                f"{g} {h.sum / h.count * 1000:.1f} ms / ≤ {h.quantile_bound(0.99) * 1000:.0f} ms / {h.sum:.2f} s"
                for g, h in pauses.items()
            )
            + f" ({sum(h.sum for h in pauses.values()) / max(w.service_cpu, 1e-9) * 100:.1f} % of the service's CPU)",
        )
    row("service RSS (end of window / max in window)", f"{w.rss_kib_end / 1024:.1f} / {w.rss_kib_max / 1024:.1f} MiB")
    if "idle" in result:
        idle = result["idle"]
        row("idle service RSS (0 targets)", f"{idle['rss_mib']:.1f} MiB ({idle['mcpu']:.1f} mCPU)")
        above = w.rss_kib_end / 1024 - idle["rss_mib"]
        row("RSS above idle", f"{above:.1f} MiB ({above * per_k:.1f} MiB per 1,000 targets)")
    row("service RSS at the end of each period", " · ".join(f"{m:g}" for m in service["rss_by_period_mib"]) + " MiB")
    row("service peak RSS (VmHWM, start-up included)", f"{service['peak_rss_mib']:.1f} MiB")
    row("Prometheus /api/v1/query per period (server, all services)", f"{w.per_period(w.server_queries):.1f}")
    row("Prometheus query duration", w.query_duration.describe())
    row("Kubernetes API calls per period, by verb (all services)", verbs(w.api, w.periods))
    row("start-up: spawn → caches synced (/readyz)", f"{s['ready_s']:.1f} s")
    row("start-up: service CPU to its first full pass", f"{s['cpu_s']:.1f} s")
    row(
        "start-up: RSS at ready / after first pass / peak",
        f"{s['rss_at_ready_mib']:.1f} / {s['rss_after_first_pass_mib']:.1f} / {s['peak_rss_mib']:.1f} MiB",
    )
    startup_lists = {k: v for k, v in s["api"].items() if k.startswith("list ")}
    row("start-up: LIST calls (all services)", verbs(startup_lists, 1))
    row(
        "one /metrics scrape of the service",
        f"{service['scrape']['series']:,} series, {service['scrape']['bytes'] / 1024:.0f} KiB; its CPU the mean "
        f"of {service['scrape']['scrapes']:,} back to back over a period",
    )
    row("others: Prometheus", f"{w.mcpu(w.prometheus_cpu):.0f} mCPU, RSS {w.prometheus_rss_kib / 1024:.0f} MiB")
    row("others: emulator + exporter + harness (one process)", f"{w.mcpu(w.harness_cpu):.0f} mCPU")
    return lines


def as_json(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k != "services"}
    out["services"] = []
    for service in result["services"]:
        w: Window = service["steady"]
        entry = {k: v for k, v in service.items() if k not in ("steady", "checks")}
        entry["checks"] = [
            {"figure": c.figure, "value": c.value, "goal": c.goal, "met": c.met, "checked": c.checked}
            for c in service["checks"]
        ]
        entry["steady"] = {
            "seconds": w.seconds,
            "periods": w.periods,
            "counted_periods": w.counted_periods,
            "service_mcpu": w.mcpu(w.service_cpu),
            "compiled": w.compiled,
            "prometheus_mcpu": w.mcpu(w.prometheus_cpu),
            "harness_mcpu": w.mcpu(w.harness_cpu),
            "lag_p99_s": w.lag.quantile(0.99),
            "reconcile_p99_s": w.reconcile.quantile(0.99),
            "loop_lag_p99_s": w.loop_lag.quantile(0.99),
            "gc_pause_seconds": {g: {"count": h.count, "sum": h.sum} for g, h in w.gc_pauses.items()},
            "renew_late_p99_s": w.renew_late.quantile(0.99),
            "rss_end_mib": w.rss_kib_end / 1024,
            "rss_max_mib": w.rss_kib_max / 1024,
            "service_queries_per_period": w.per_period(w.service_queries),
            "server_queries_per_period": w.per_period(w.server_queries),
            "api_per_period": {k: v / w.periods for k, v in w.api.items()},
            "reconciles": w.reconciles,
        }
        out["services"].append(entry)
    return out
