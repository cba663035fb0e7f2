"""Benchmark: ``autoscaler run`` at scale, against the API emulator and a real Prometheus.

Sets up ``targets`` Deployments × ``pods`` pods (seeded Running and Ready, with container requests)
spread over ``namespaces`` namespaces (with ``--bystanders N``, N more pods in each namespace, of
Deployments no target scales), and one ScalingTarget per Deployment with two metrics:

* ``Resource cpu`` Utilization 60 % (the built-in cAdvisor query over ``container_cpu_usage_seconds_total``);
* a ``Pods`` metric ``sum by (namespace, pod) (rate(http_requests_total{<<scope>>}[2m]))``, AverageValue 10.

A :class:`MetricsExporter` serves both counters per pod at a rate that puts every target inside its
tolerance (0.3 CPU of a 500m request = 60 %, 10 requests/s per pod): the steady state, where nothing
should be written. A private Prometheus scrapes the exporter every 15 s (``--scrape-interval``: what
clusters run for cAdvisor; at 10,000 targets a 1 s scrape of 200,000 series left Prometheus, sharing the
harness's core with the emulator, slower than the service's 5 s query deadline after ~10 minutes, and the
failed metrics' status writes slowed the emulator further: docs/benchmarks-history.md, the twentieth session). The
emulator runs in this process (its request log counts the API calls by verb); the service runs as its own process
(``python -m autoscaler run --config …``) and is measured from ``/proc/<pid>``.

Phases:

1. idle: the service against the same emulator and Prometheus with no objects at all (RSS and CPU
   baseline), then stopped;
2. start-up: seed the objects, start the service (or ``--shards N`` services, one per label shard: each
   namespace's targets labelled round robin, or with ``--shard-by namespace`` whole namespaces, each shard
   watching only its own); time to ``/readyz`` 200 (caches synced) and to the first full pass
   (every one of its targets' first status write);
3. steady window: ``periods`` sync periods right after the first full pass (or ``--settle`` seconds
   after it; every target's decision history, and the RSS with it, grows until 300 s after its first
   sync, the scale-down window: the report says whether the window reached that). Reported per service:
   scheduling lag (``autoscaler_schedule_lag_seconds``), sync duration, event-loop lag, Lease renewals
   (how late, failed, lost), service CPU and RSS, Prometheus queries (the service's counter and the
   server's own), Kubernetes API calls by verb, writes, LISTs, the cost of one /metrics scrape (after the
   window: scrapes back to back for a period, the steady rate's CPU taken off, per scrape);
3b. with ``--outage-periods N``: every Prometheus query answered 503 for N periods (a proxy between the
   services and Prometheus); with ``--brownout SHARE``: that share of the queries (a different few each sync)
   answered only past the service's deadline (``--brownout-kind slow``, the default) or 503 (``error``) for
   ``--brownout-periods``; for each, the API writes of each period, the backend's state as the service reports
   it, and the time until every target is ScalingActive again (servicebench/brownout.py);
3c. with ``--reaction SAMPLE``: SAMPLE targets' request rate stepped ×3 (``--reaction-factor``) at one instant,
   every counter continuous; per target, the time from the first scrape carrying the step to its scale write,
   and their distribution (servicebench/reaction.py; the sample is left out of the checks below);
4. checks: no Deployment was scaled, every target is ScalingActive with both metrics read, no warning in
   a service's log, every goal of issue 13 met (servicebench/goals.py), and each service, sent SIGTERM,
   stopped within its own shutdown budget (5 s), the reaction's p99 within a period and 2 s (3c), and the
   services' reads at most 1/10 of each peer's (5) — else the exit code is 1;
5. with ``--peers PERIODS``: the services stopped, the same Prometheus and data over the same period, first idle
   (its scrapes alone), then asked as prometheus-adapter behind the HPA and as KEDA would ask it (one query per
   target per metric per period, spread over the period), PERIODS periods each; its CPU and engine time beside
   what the services' reads cost it in the steady window (servicebench/peers.py).

The services run on CPU 0 (``--service-cpus``), everything else (this harness with the emulator and the
exporter, Prometheus) on the other CPUs: "one core" for the service, measured, not shared with its load.

    python bench/service.py --targets 1000 --pods 10 --periods 4
    python bench/service.py --targets 10000 --pods 10 --periods 20
    python bench/service.py --targets 10000 --pods 10 --periods 20 --shards 2    # 2 shards × 5,000
        # (every namespace split: Prometheus answers each twice; on this 2-core machine its answers took
        # longer than the 5 s deadline, add --set prometheus.timeoutSeconds=12 as BENCHMARKS.md's table does)
    python bench/service.py --targets 10000 --pods 10 --periods 20 --shards 2 --shard-by namespace
    python bench/service.py --targets 50 --pods 10 --periods 2 --period 5      # a quick run
    python bench/service.py --targets 1000 --pods 10 --periods 8 --bystanders 1000  # shared namespaces
    python bench/service.py --targets 1000 --pods 4 --periods 2 --brownout 0.7       # a metrics brownout
    python bench/service.py --targets 1000 --pods 4 --periods 2 --outage-periods 6   # a metrics outage
    python bench/service.py --targets 10000 --pods 10 --periods 12 --settle 30 --set prometheus.timeoutSeconds=12 \
        --outage-periods 4 --brownout 0.8 --brownout-periods 4 --reaction 200 --peers 3 --json costs.json
        # issue 41's costs outside the service, in one run (BENCHMARKS.md, "What a user pays outside the service")

Every process it starts (the service, Prometheus) is stopped on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from servicebench.report import as_json, report  # noqa: E402
from servicebench.run import run  # noqa: E402

from autoscaler_sandbox import find_binary  # noqa: E402


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10, help="pods per target")
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument(
        "--bystanders",
        type=int,
        default=0,
        help="pods per namespace that no target scales (other workloads sharing the namespaces), their "
        "series served as the targets' pods' are",
    )
    parser.add_argument("--periods", type=int, default=4, help="sync periods in the steady window")
    parser.add_argument("--period", type=float, default=15.0, help="sync.periodSeconds (default 15)")
    parser.add_argument(
        "--scrape-interval", type=float, default=15.0, help="Prometheus' scrape interval in seconds (default 15)"
    )
    parser.add_argument(
        "--settle", type=float, default=0.0, help="seconds between the first full pass and the steady window"
    )
    parser.add_argument("--idle-seconds", type=float, default=15.0, help="length of the idle measurement")
    parser.add_argument("--no-idle", action="store_true", help="skip the idle-service baseline")
    parser.add_argument("--no-leader-election", action="store_true")
    parser.add_argument(
        "--shards",
        type=int,
        default=1,
        help="run N services, one per label shard (sharding.shard shard-0…), each namespace's targets spread "
        "round robin over them (see --shard-by)",
    )
    parser.add_argument(
        "--shard-by",
        choices=("target", "namespace"),
        default="target",
        help="with --shards: every namespace's targets split over the shards (target, the default: labels chosen "
        "without regard to namespaces), or whole namespaces round robin, each shard watching only its own "
        "(namespace: docs/sharding.md's advice)",
    )
    parser.add_argument(
        "--service-cpus",
        default="0",
        help="the CPUs the service processes run on (default 0: one core); the harness and Prometheus get the "
        "others ('' for no pinning)",
    )
    parser.add_argument(
        "--brownout",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="after the steady window (and the outage, if any), fail this share of Prometheus' queries (see "
        "--brownout-kind) for --brownout-periods periods, and report the API writes of each period and the recovery",
    )
    parser.add_argument(
        "--brownout-kind",
        choices=("slow", "error"),
        default="slow",
        help="how a brownout fails a query: answered only after the service's deadline (slow, the default) or "
        "503 at once (error)",
    )
    parser.add_argument("--brownout-periods", type=int, default=6, help="periods the brownout lasts (default 6)")
    parser.add_argument(
        "--outage-periods",
        type=int,
        default=0,
        metavar="N",
        help="after the steady window, answer every Prometheus query 503 for N periods (an outage), and report the "
        "API writes of each period and the recovery",
    )
    parser.add_argument(
        "--reaction",
        type=int,
        default=0,
        metavar="SAMPLE",
        help="after the faults, step the load of SAMPLE targets (spread over the namespaces) and report, per "
        "target, the time from the first scrape carrying it to the scale write (servicebench/reaction.py)",
    )
    parser.add_argument(
        "--reaction-factor",
        type=float,
        default=0.0,
        help="the step of --reaction (default: 3, or more where one scrape interval of it would stay inside the "
        "tolerance of a 2 m rate(): reaction.least_factor + 1)",
    )
    parser.add_argument(
        "--peers",
        type=int,
        default=0,
        metavar="PERIODS",
        help="after the services stop, measure Prometheus idle and then asked as prometheus-adapter and KEDA would "
        "ask it (one query per target per metric per period), PERIODS periods each, beside the services' reads "
        "(servicebench/peers.py)",
    )
    parser.add_argument("--log-level", default="info", help="the service's logging.level")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a service setting, e.g. --set sync.batchWindowSeconds=1",
    )
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run the service under cProfile (slower; writes service.prof in the work dir)",
    )
    parser.add_argument(
        "--launcher",
        metavar="SCRIPT",
        help="run the service as `python SCRIPT run --config …` instead of `python -m autoscaler "
        "run …` (diagnostics, e.g. a tracemalloc wrapper)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work dir (service logs, configs)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    args.service_cpus = {int(c) for c in args.service_cpus.split(",") if c.strip()} or None
    others = set(os.sched_getaffinity(0)) - (args.service_cpus or set())
    if args.service_cpus and others:
        os.sched_setaffinity(0, others)  # the harness, the emulator and Prometheus (spawned from here)
    if find_binary("prometheus") is None:
        print("the prometheus binary is not installed (Debian package 'prometheus')", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="autoscaler-bench-"))
    # SIGTERM ends the run like Ctrl-C does: the finally blocks stop every process started.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        result = asyncio.run(run(args, workdir))
    except KeyboardInterrupt:
        print("interrupted; every process started was stopped", file=sys.stderr)
        return 130
    finally:
        if args.keep or args.profile:
            print(f"work dir kept: {workdir}", file=sys.stderr)
        else:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(as_json(result), indent=1, default=str))
    return 0 if not result["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
