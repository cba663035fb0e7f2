"""The benchmark run: idle baseline, start-up, the steady window, and the checks."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget
from kube_emulator import KubeEmulator
from servicebench.brownout import BROWNOUT_WARNINGS, FaultyPrometheus, episode, episodes, slow_delay
from servicebench.cluster import (
    CPU_USAGE,
    CRD,
    REQUESTS_PER_POD,
    TARGETS,
    Workload,
    bystanders,
    layout,
    seed_cluster,
    serve_load,
)
from servicebench.goals import checks, fewest_syncs
from servicebench.peers import GOAL, peer_cost, ratio, service_reads
from servicebench.process import ServiceProcess, stop_all
from servicebench.procfs import cpu_seconds, memory_kib
from servicebench.reaction import least_factor, reaction
from servicebench.speed import reference_ms
from servicebench.window import Harness, StatusWrites, Window, observe, scrape_cost


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    plan = layout(args.targets, args.pods, args.namespaces)
    others = bystanders(args.bystanders, args.pods, args.namespaces)
    pods_total = sum(len(w.pods) for w in [*plan, *others])
    result: dict[str, Any] = {
        "targets": args.targets,
        "pods": args.pods,
        "namespaces": args.namespaces,
        "bystanders": args.bystanders,
        "shard_by": args.shard_by,
        "period": args.period,
        "periods": args.periods,
        "settle": args.settle,
        "overrides": args.set,
    }
    with MetricsExporter() as exporter:
        serve_load(exporter, [*plan, *others])
        prom = PrometheusSandbox(
            scrape_targets=[ScrapeTarget(exporter.address)],
            scrape_interval=args.scrape_interval,
            startup_timeout=120,
            work_dir=workdir / "prometheus",
        )
        try:
            await prom.astart()
            progress(f"prometheus {prom.url} scraping {2 * pods_total:,} series every {args.scrape_interval:g}s")
            async with (
                KubeEmulator(bookmark_interval=60.0, versions_per_object=2) as emu,
                aiohttp.ClientSession() as session,
            ):
                emu.install_crd(CRD)
                kubeconfig = emu.write_kubeconfig(workdir / "kubeconfig")
                harness = Harness(args, emu, prom, session, workdir)
                proxy = await FaultyPrometheus(prom.url).start() if episodes(args) else None
                harness.prometheus_url = proxy.url if proxy is not None else None
                try:
                    await measure(harness, kubeconfig, plan, others, pods_total, result, proxy, exporter)
                finally:
                    await stop_all(harness.services)
                    if proxy is not None:
                        await proxy.stop()
        finally:
            await asyncio.to_thread(prom.close)
    return result


async def measure(
    h: Harness,
    kubeconfig: Path,
    plan: list[Workload],
    others: list[Workload],
    pods_total: int,
    result: dict[str, Any],
    proxy: FaultyPrometheus | None = None,
    exporter: MetricsExporter | None = None,
) -> None:
    args = h.args
    # 1. idle: the same process set-up, no objects.
    if not args.no_idle:
        idle = h.launch("idle", kubeconfig)
        await h.wait_ready(idle, 60)
        await asyncio.sleep(5)
        first, last, rss_max, rss_end, _, _ = await observe(h, idle, args.idle_seconds)
        window = Window.between(first, last, args.period, rss_max, rss_end, 0)
        result["idle"] = {
            "rss_mib": rss_end / 1024,
            "rss_max_mib": rss_max / 1024,
            "mcpu": window.mcpu(window.service_cpu),
            "api": window.api,
        }
        code = (await stop_all([idle]))[0]
        shutdown, source = idle.shutdown_figure()
        result["idle"]["shutdown_s"] = shutdown
        progress(
            f"idle service: RSS {rss_end / 1024:.1f} MiB, {window.mcpu(window.service_cpu):.1f} mCPU (exit {code}, "
            f"shutdown {'not measured' if shutdown is None else f'{shutdown:.3f} s'}, from the {source})"
        )
        h.emu.requests.reset()

    # 2. start-up.
    started = time.monotonic()

    def shard(w: Workload) -> str | None:
        return shard_of(w, args.shards, args.shard_by, args.namespaces)

    seed_cluster(h.emu, plan, shard, others)
    # The emulator (in this process) holds 100,000 pods' objects: with the interpreter's thresholds its full
    # collections took up to 3 s at 10,000 targets, during which it answered nobody — Lease renewals
    # included (the likely way the shards lost their Leases once). A real API server does not stop so; leave the
    # seeded objects out of the collector's walks.
    gc.collect()
    gc.freeze()
    progress(
        f"seeded {len(plan) + len(others):,} deployments, {pods_total:,} pods, {len(plan):,} targets "
        f"in {time.monotonic() - started:.1f}s"
    )
    # rate(x[2m]) divides by the whole 2 minutes: until Prometheus has scraped for that long, it reads
    # low, and the targets would want to scale down. Wait for every series' rate to be right.
    for metric, expected in (
        ("http_requests_total", REQUESTS_PER_POD),
        ("container_cpu_usage_seconds_total", CPU_USAGE),
    ):
        query = f"count((rate({metric}[2m]) > {expected * 0.98}) < {expected * 1.02})"
        await asyncio.to_thread(
            h.prom.wait_for, query, lambda r: bool(r) and int(float(r[0]["value"][1])) == pods_total, 300
        )
    progress("Prometheus has every series' rate over a full 2 m window")
    result["speed_ms"] = [await asyncio.to_thread(reference_ms, args.service_cpus)]
    shards = [f"shard-{i}" for i in range(args.shards)] if args.shards > 1 else [None]
    members = [[w for w in plan if shard(w) == name] for name in shards]
    # Targets by namespace, per service: shards by namespace watch only theirs (kubernetes.namespaces).
    spread = [Counter(w.namespace for w in ws) for ws in members]
    watched = [sorted(counts) if args.shard_by == "namespace" else None for counts in spread]
    services = [
        h.launch(name or "service", kubeconfig, name, namespaces)
        for name, namespaces in zip(shards, watched, strict=True)
    ]
    results: list[dict[str, Any]] = await asyncio.gather(
        *(
            start_up(h, service, name, {f"{w.namespace}/{w.name}" for w in ws})
            for service, name, ws in zip(services, shards, members, strict=True)
        )
    )

    # 3. the steady window: every service over the same seconds.
    if args.settle:
        await asyncio.sleep(args.settle)
    observed = await asyncio.gather(*(observe(h, s, args.periods * args.period, args.period) for s in services))
    for service, entry, (first, last, rss_max, rss_end, prom_rss, by_period) in zip(
        services, results, observed, strict=True
    ):
        entry["steady"] = Window.between(first, last, args.period, rss_max, rss_end, prom_rss)
        entry["rss_by_period_mib"] = [round(kib / 1024, 1) for kib in by_period]
        entry["peak_rss_mib"] = memory_kib(service.pid)["VmHWM"] / 1024
        steady: Window = entry["steady"]
        cost, size, series, scrapes = await scrape_cost(h, service, steady.service_cpu / steady.seconds, args.period)
        entry["scrape"] = {"cpu_s": cost, "bytes": size, "series": series, "scrapes": scrapes}
    result["services"] = results
    # What the services' reads cost Prometheus over the window (one service's snapshots: Prometheus' figures
    # cover every service's reads), beside the peers' pattern measured at the end (4b).
    first, last = observed[0][0], observed[0][1]
    result["service_reads"] = service_reads(first, last, args.period)
    if proxy is not None:  # 3b. the backend fails (an outage, a brownout) for a few periods each, then recovers
        result["faults"] = []
        for fault in episodes(args):
            progress(f"{fault.name}: {fault.describe(slow_delay(services))}")
            result["faults"].append(await episode(h, proxy, services, plan, fault))

    sampled: set[str] = set()
    if args.reaction:  # 3c. a step of load on a sample of targets: the time from its first scrape to the scale write
        assert exporter is not None
        # A step the first scrape carrying it makes a change the service must act on, with room to spare.
        factor = args.reaction_factor or max(3.0, least_factor(args.scrape_interval) + 1.0)
        progress(f"reaction: a sample of {args.reaction} targets' load stepped ×{factor:g}")
        result["reaction"] = await reaction(h, exporter, plan, args.reaction, factor)
        sampled = set(result["reaction"]["sampled"])

    # 4. checks: every target synced every period, nothing scaled (the reaction's sample aside), every target
    # active with both metrics read, no warning in a log, and every goal met.
    problems: list[str] = []
    for service, entry, counts in zip(services, results, spread, strict=True):
        # A sync pushed past its tick is skipped: the CPU figure would flatter.
        syncs = sum(entry["steady"].reconciles.values())
        periods = entry["steady"].counted_periods
        fewest = fewest_syncs(list(counts.values()), periods)
        if syncs < fewest:
            problems.append(
                f"{service.name}: only {syncs:.0f} syncs in the window, {entry['targets'] * periods:.0f} expected "
                f"(at least {fewest:.0f}): targets missed ticks"
            )
    if "reaction" in result and not result["reaction"]["met"]:
        reacted = result["reaction"]
        problems.append(
            f"reaction p99 {reacted['p99']} s, goal ≤ {reacted['goal_s']:g} s"
            + (f"; {len(reacted['missed'])} sampled targets never written" if reacted["missed"] else "")
        )
    problems.extend(steady_problems(h, [w for w in plan if f"{w.namespace}/{w.name}" not in sampled]))
    result["others_cpus"] = len(os.sched_getaffinity(0))
    result["query_deadline_s"] = services[0].query_deadline
    # SIGTERM, and each service's graceful shutdown timed (from its log, and to its exit). Stopped off this
    # loop (stop_all): waiting on it, every run's services logged "shutdown took longer than expected".
    codes = await stop_all(services)
    for service, entry, code in zip(services, results, codes, strict=True):
        entry["exit_code"] = code
        entry["shutdown_s"], entry["shutdown_from"] = service.shutdown_figure()
        entry["lease"] = service.lease_figures()
        warnings = Counter(
            str(line.get("event"))
            for line in service.log_lines()
            if line.get("level") in ("warning", "error", "critical")
            and not (proxy is not None and line.get("event") in BROWNOUT_WARNINGS)
        )
        if warnings:
            problems.append(f"{service.name}: log warnings/errors: {dict(warnings.most_common(5))}")
        entry["checks"] = checks(entry, args.period, result.get("idle"))
        problems.extend(f"{service.name}: {c.figure} {c.value}, goal {c.goal}" for c in entry["checks"] if not c.met)
    result["problems"] = problems
    result["speed_ms"].append(await asyncio.to_thread(reference_ms, args.service_cpus))
    if args.peers:  # 4b. the services stopped: the same Prometheus, data and period, asked as the peers ask it
        # Every CPU for Prometheus and the querier now: the services' core is free, and at 1,000 targets the
        # adapter's pattern alone wants most of one.
        everything = os.sched_getaffinity(0) | (args.service_cpus or set())
        assert h.prom.pid is not None
        for pid in (os.getpid(), h.prom.pid):
            allow_every_thread(pid, everything)
        progress(f"peers: Prometheus idle, then asked as prometheus-adapter and KEDA would, {args.peers} periods each")
        result["peers"] = await peer_cost(h.prom, h.session, plan, args.period, args.peers)
        for pattern, entry in result["peers"]["patterns"].items():
            share = ratio(result["service_reads"], entry, result["peers"]["baseline"])
            if not share["met"]:
                problems.append(
                    f"the service's reads cost Prometheus {share['cpu']} of the {pattern} pattern's, goal ≤ {GOAL:g}"
                )


def allow_every_thread(pid: int, cpus: set[int]) -> None:
    """Let every thread of ``pid`` run on ``cpus``: an affinity is a thread's, and setting the process's id sets
    its first thread's only (Prometheus' Go threads, the exporter's, kept their one CPU so)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task), cpus)


def shard_of(w: Workload, shards: int, by: str = "target", namespaces: int = 50) -> str | None:
    """The shard of a workload's target (None: one unsharded service): "target", each namespace's targets
    round robin over the shards (every shard has targets in every namespace: labels chosen without regard
    to namespaces); "namespace", whole namespaces round robin (docs/sharding.md's advice). ``namespaces``:
    how many the plan spreads its targets over (``layout`` puts target i in namespace i mod namespaces)."""
    if shards <= 1:
        return None
    if by == "namespace":
        return f"shard-{int(w.namespace.rsplit('-', 1)[1]) % shards}"
    return f"shard-{int(w.name.rsplit('-', 1)[1]) // namespaces % shards}"


async def start_up(h: Harness, service: ServiceProcess, shard: str | None, keys: set[str]) -> dict[str, Any]:
    """Spawn → ready (caches synced) → every one of its targets synced once."""
    args = h.args
    ready = await h.wait_ready(service, args.startup_timeout)
    progress(f"{service.name} pid {service.pid}: ready (caches synced) {ready:.1f}s after spawn")
    synced_rss = memory_kib(service.pid)
    written = StatusWrites(h.emu)
    while missing := keys - written.update():
        if time.monotonic() - service.started > args.startup_timeout + 2 * args.period:
            raise SystemExit(
                f"{len(missing)} of {len(keys)} targets of {service.name} never synced; log: {service.log}"
            )
        if not service.alive():
            raise SystemExit(f"{service.name} died; log: {service.log}")
        await asyncio.sleep(0.2)
    first_pass = time.monotonic() - service.started
    memory = memory_kib(service.pid)
    progress(f"{service.name}: first full pass {first_pass:.1f}s after spawn")
    return {
        "name": service.name,
        "shard": shard,
        "targets": len(keys),
        "startup": {
            "ready_s": ready,
            "first_pass_s": first_pass,
            "cpu_s": cpu_seconds(service.pid),
            "rss_at_ready_mib": synced_rss["VmRSS"] / 1024,
            "rss_after_first_pass_mib": memory["VmRSS"] / 1024,
            "peak_rss_mib": memory["VmHWM"] / 1024,
            "api": h.emu.requests.counts(),
        },
    }


def steady_problems(h: Harness, plan: list[Workload]) -> list[str]:
    problems = []
    scaled = [
        w.name
        for w in plan
        if int((h.emu.get("deployments", w.name, w.namespace) or {})["spec"]["replicas"]) != len(w.pods)
    ]
    if scaled:
        problems.append(f"{len(scaled)} deployments were scaled (e.g. {scaled[:3]})")
    inactive = []
    for w in plan:
        status = (h.emu.get(TARGETS, w.name, w.namespace) or {}).get("status") or {}
        active: dict[str, Any] = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "ScalingActive"), {}
        )
        proposal = (status.get("lastDecision") or {}).get("proposal")
        if active.get("status") != "True" or len(status.get("currentMetrics") or []) != 2 or proposal != len(w.pods):
            inactive.append(
                f"{w.namespace}/{w.name}: proposal {proposal}, {active.get('reason')} {active.get('message', '')[:120]}"
            )
    if inactive:
        problems.append(
            f"{len(inactive)} targets not steady (ScalingActive with 2 metrics, proposing the "
            f"current count), e.g. {inactive[:2]}"
        )
    return problems
