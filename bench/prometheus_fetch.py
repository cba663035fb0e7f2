"""Benchmark: one sync's metric fetch for many targets against a real Prometheus, batched vs unbatched.

Loads (promtool backfill) cAdvisor-like CPU counters (an app container, the pause container and the
pod-level series, as cAdvisor exports them) and a custom per-pod request counter for
``targets × pods`` pods spread over ``namespaces`` namespaces, starts a private Prometheus on them,
then times :meth:`MetricsReader.read` for every target (one Resource cpu metric and one Pods metric
each) at a fixed time. Reports HTTP queries per sync, wall time, client CPU (this process) and
Prometheus CPU (the server process, from /proc), median over ``--runs`` after one warm-up.

    python3 bench/prometheus_fetch.py                      # 1,000 targets × 20 pods
    python3 bench/prometheus_fetch.py --targets 100 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autoscaler.core.observation import MetricReading, PodsReading, ResourceReading
from autoscaler.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
)
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings, TargetQuery
from autoscaler.values.quantity import Quantity
from autoscaler_sandbox import PrometheusSandbox

T0 = 1_700_000_000
STEP = 15
SPAN = 180
CUSTOM_QUERY = "sum by (namespace, pod) (rate(http_requests_total{<<scope>>}[2m]))"


def layout(targets: int, pods: int, namespaces: int) -> list[tuple[str, str, list[str]]]:
    """(namespace, deployment, pod names) per target."""
    result = []
    for index in range(targets):
        namespace = f"team-{index % namespaces:03d}"
        name = f"svc-{index:04d}"
        result.append((namespace, name, [f"{name}-7f9c{index % 97:02d}-{p:05d}" for p in range(pods)]))
    return result


def write_openmetrics(path: Path, plan: list[tuple[str, str, list[str]]]) -> int:
    times = list(range(T0 - SPAN, T0 + 1, STEP))
    samples = 0
    with path.open("w") as out:
        out.write("# TYPE container_cpu_usage_seconds_total gauge\n")
        for t_index, (namespace, _, pods) in enumerate(plan):
            for p_index, pod in enumerate(pods):
                rate = 0.05 + ((t_index * 7 + p_index) % 40) / 100
                for container, share in (("app", 1.0), ("POD", 0.01), ("", 1.01)):
                    labels = f'namespace="{namespace}",pod="{pod}",container="{container}"'
                    for t in times:
                        value = rate * share * (t - T0 + 3600)
                        out.write(f"container_cpu_usage_seconds_total{{{labels}}} {value:.6f} {t}\n")
                    samples += len(times)
        out.write("# TYPE http_requests_total gauge\n")
        for t_index, (namespace, _, pods) in enumerate(plan):
            for p_index, pod in enumerate(pods):
                rate = 1 + (t_index + p_index) % 50
                labels = f'namespace="{namespace}",pod="{pod}"'
                for t in times:
                    out.write(f"http_requests_total{{{labels}}} {rate * (t - T0 + 3600)} {t}\n")
                samples += len(times)
        out.write("# EOF\n")
    return samples


def metrics() -> tuple[MetricSpec, MetricSpec]:
    cpu = MetricSpec(
        MetricSourceType.RESOURCE, "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=60)
    )
    rps = MetricSpec(
        MetricSourceType.PODS,
        "http_requests",
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10")),
        query=CUSTOM_QUERY,
    )
    return cpu, rps


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    url: str, pid: int, targets: list[TargetQuery], batch: bool, runs: int, concurrency: int
) -> dict[str, object]:
    settings = PrometheusSettings(url=url, timeout_seconds=30, concurrency=concurrency)
    rows: list[dict[str, float]] = []
    async with PrometheusClient(settings) as client:
        reader = MetricsReader(client, settings, batch=batch)
        for run in range(runs + 1):
            calls = client.stats.calls
            prom_cpu = proc_cpu_seconds(pid)
            cpu = time.process_time()
            wall = time.perf_counter()
            readings = await reader.read(targets, T0)
            wall = time.perf_counter() - wall
            cpu = time.process_time() - cpu
            prom_cpu = proc_cpu_seconds(pid) - prom_cpu
            check(readings, targets)
            row = {
                "wall_s": wall,
                "client_cpu_s": cpu,
                "prometheus_cpu_s": prom_cpu,
                "queries": client.stats.calls - calls,
            }
            if run > 0:  # run 0 warms Prometheus' caches and the connection pool
                rows.append(row)
    return {
        "mode": "batched" if batch else "unbatched",
        "targets": len(targets),
        "queries_per_sync": rows[0]["queries"],
        **{
            f"{key}_median": statistics.median(r[key] for r in rows)
            for key in ("wall_s", "client_cpu_s", "prometheus_cpu_s")
        },
        "wall_s_min": min(r["wall_s"] for r in rows),
        "wall_s_max": max(r["wall_s"] for r in rows),
    }


def check(readings: list[list[MetricReading]], targets: list[TargetQuery]) -> None:
    for target, (cpu, rps) in zip(targets, readings, strict=True):
        if not (isinstance(cpu, ResourceReading) and isinstance(rps, PodsReading)):
            raise SystemExit(f"{target.namespace}/{target.name}: unexpected readings {cpu!r} {rps!r}")
        if set(cpu.pods) != set(target.pod_names) or set(rps.pods) != set(target.pod_names):
            raise SystemExit(f"{target.namespace}/{target.name}: pods missing from the readings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--modes", default="batched,unbatched")
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    parser.add_argument(
        "--no-gc-freeze",
        action="store_true",
        help="do not gc.freeze() the long-lived objects (targets) before measuring",
    )
    args = parser.parse_args()

    plan = layout(args.targets, args.pods, args.namespaces)
    cpu, rps = metrics()
    targets = [
        TargetQuery(
            ns,
            f"{name}-hpa",
            CrossVersionObjectReference("Deployment", name, "apps/v1"),
            f"app={name}",
            pods,
            (cpu, rps),
        )
        for ns, name, pods in plan
    ]
    with PrometheusSandbox(startup_timeout=120) as prom:
        started = time.perf_counter()
        source = prom.work_dir / "bench.om"
        samples = write_openmetrics(source, plan)
        prom.backfill(source)
        source.unlink()
        print(
            f"# {args.targets} targets × {args.pods} pods in {args.namespaces} namespaces: "
            f"{samples:,} samples loaded in {time.perf_counter() - started:.1f}s",
            file=sys.stderr,
        )
        assert prom.pid is not None
        time.sleep(2)  # let Prometheus finish loading the blocks before timing it
        if not args.no_gc_freeze:
            # What a long-running service does after start-up: long-lived objects (here the targets
            # and their pod lists) leave the generations the collector scans on every sync.
            gc.collect()
            gc.freeze()
        results = [
            asyncio.run(measure(prom.url, prom.pid, targets, mode == "batched", args.runs, args.concurrency))
            for mode in args.modes.split(",")
        ]
    if args.json:
        for result in results:
            print(json.dumps(result))
        return
    print("| mode | targets | HTTP queries / sync | wall (median, min–max) | client CPU | Prometheus CPU |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['mode']} | {r['targets']} | {r['queries_per_sync']:.0f} | {r['wall_s_median']:.3f} s "
            f"({r['wall_s_min']:.3f}–{r['wall_s_max']:.3f}) | {r['client_cpu_s_median']:.3f} s | "
            f"{r['prometheus_cpu_s_median']:.3f} s |"
        )


if __name__ == "__main__":
    main()
