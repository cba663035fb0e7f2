"""Benchmark: ``autoscaler run`` at scale, against the API emulator and a real Prometheus.

Sets up ``targets`` Deployments × ``pods`` pods (seeded Running and Ready, with container requests)
spread over ``namespaces`` namespaces, and one ScalingTarget per Deployment with two metrics:

* ``Resource cpu`` Utilization 60 % (the built-in cAdvisor query over ``container_cpu_usage_seconds_total``);
* a ``Pods`` metric ``sum by (namespace, pod) (rate(http_requests_total{<<scope>>}[2m]))``, AverageValue 10.

A :class:`MetricsExporter` serves both counters per pod at a rate that puts every target inside its
tolerance (0.3 CPU of a 500m request = 60 %, 10 requests/s per pod): the steady state, where nothing
should be written. A private Prometheus scrapes the exporter every second. The emulator runs in this
process (its request log counts the API calls by verb); the service runs as its own process
(``python -m autoscaler run --config …``) and is measured from ``/proc/<pid>``.

Phases:

1. idle: the service against the same emulator and Prometheus with no objects at all (RSS and CPU
   baseline), then stopped;
2. start-up: seed the objects, start the service; time to ``/readyz`` 200 (caches synced) and to the
   first full pass (every target's first status write);
3. steady window: ``periods`` sync periods right after the first full pass. Reported: scheduling lag
   (``autoscaler_schedule_lag_seconds``), sync duration, event-loop lag, service CPU and RSS, Prometheus
   queries (the service's counter and the server's own), Kubernetes API calls by verb, writes, LISTs;
4. checks: no Deployment was scaled, every target is ScalingActive with both metrics read.

    python bench/service.py --targets 1000 --pods 10 --periods 4
    python bench/service.py --targets 50 --pods 10 --periods 2 --period 5      # a quick run

Every process it starts (the service, Prometheus) is stopped on exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import yaml  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from autoscaler.values.timestamps import rfc3339  # noqa: E402
from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget, find_binary  # noqa: E402
from kube_emulator import KubeEmulator  # noqa: E402

CRD = ROOT / "manifests" / "crd.yaml"
TARGETS = "scalingtargets.autoscaler.dev"
PODS_QUERY = "sum by (namespace, pod) (rate(http_requests_total{<<scope>>}[2m]))"
CPU_REQUEST_MILLI = 500
CPU_USAGE = 0.3  # cores per pod: 60 % of the request, the target utilization
REQUESTS_PER_POD = 10.0  # the Pods metric's target average value
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---- /proc --------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS) and RssAnon of a process, in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0])
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- the cluster --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    pods: tuple[str, ...]


def layout(targets: int, pods: int, namespaces: int) -> list[Workload]:
    plan = []
    for index in range(targets):
        name = f"svc-{index:04d}"
        template_hash = f"{(index * 2654435761) % 16**8:08x}"[:10]
        plan.append(
            Workload(
                f"team-{index % namespaces:03d}", name, tuple(f"{name}-{template_hash}-{p:05d}" for p in range(pods))
            )
        )
    return plan


def _container(name: str) -> dict[str, Any]:
    return {
        "name": "app",
        "image": f"registry.example.com/{name}:1.4.2",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "PORT", "value": "8080"}],
        "resources": {"requests": {"cpu": f"{CPU_REQUEST_MILLI}m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {"name": "kube-api-access", "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def deployment(w: Workload, started: str) -> dict[str, Any]:
    labels = {"app": w.name}
    replicas = len(w.pods)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "1"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [_container(w.name)],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                },
            },
        },
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "lastUpdateTime": started,
                    "lastTransitionTime": started,
                }
            ],
        },
    }


def pod(w: Workload, name: str, index: int, started: str) -> dict[str, Any]:
    template_hash = name.rsplit("-", 2)[1]
    ip = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": w.namespace,
            "generateName": f"{w.name}-{template_hash}-",
            "labels": {"app": w.name, "pod-template-hash": template_hash},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{w.name}-{template_hash}",
                    "uid": f"00000000-0000-4000-8000-{index:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [_container(w.name)],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": f"node-{index % 100:03d}",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "priority": 0,
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        ],
                    },
                }
            ],
        },
        "status": {
            "phase": "Running",
            "hostIP": f"192.168.{index % 100}.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": started,
            "qosClass": "Burstable",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": started}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "image": f"registry.example.com/{w.name}:1.4.2",
                    "imageID": f"registry.example.com/{w.name}@sha256:{'0' * 64}",
                    "containerID": f"containerd://{index:064x}",
                    "state": {"running": {"startedAt": started}},
                }
            ],
        },
    }


def scaling_target(w: Workload) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaler.dev/v1alpha1",
        "kind": "ScalingTarget",
        "metadata": {"name": w.name, "namespace": w.namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": w.name},
            "minReplicas": 1,
            "maxReplicas": 3 * len(w.pods),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                },
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "http_requests_per_second"},
                        "target": {"type": "AverageValue", "averageValue": "10"},
                        "query": PODS_QUERY,
                    },
                },
            ],
        },
    }


def seed_cluster(emu: KubeEmulator, plan: list[Workload]) -> None:
    started = rfc3339(time.time() - 3600)  # an hour ago: past every readiness and CPU-initialization delay
    index = 0
    for w in plan:
        emu.seed(deployment(w, started))
        emu.seed(*(pod(w, name, (index := index + 1), started) for name in w.pods))
        emu.seed(scaling_target(w))


def serve_load(exporter: MetricsExporter, plan: list[Workload]) -> None:
    origin = time.time() - 3600
    for w in plan:
        for name in w.pods:
            exporter.set_rate(
                "container_cpu_usage_seconds_total",
                {"namespace": w.namespace, "pod": name, "container": "app"},
                CPU_USAGE,
                origin=origin,
            )
            exporter.set_rate(
                "http_requests_total", {"namespace": w.namespace, "pod": name}, REQUESTS_PER_POD, origin=origin
            )


# ---- /metrics -----------------------------------------------------------------------------------

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_metrics(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def total(samples: Samples, name: str, **match: str) -> float:
    return sum(
        v
        for (n, labels), v in samples.items()
        if n == name and all(dict(labels).get(k) == want for k, want in match.items())
    )


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (n, labels), value in samples.items():
        if n == name:
            key = dict(labels).get(label, "")
            out[key] = out.get(key, 0.0) + value
    return out


@dataclass
class Histogram:
    """Cumulative bucket counts (a delta between two scrapes)."""

    buckets: list[tuple[float, float]]  # (le, cumulative count), +Inf last
    count: float
    sum: float

    @classmethod
    def delta(cls, before: Samples, after: Samples, name: str) -> Histogram:
        def buckets(samples: Samples) -> dict[float, float]:
            return {float(dict(labels)["le"]): v for (n, labels), v in samples.items() if n == f"{name}_bucket"}

        b, a = buckets(before), buckets(after)
        return cls(
            sorted((le, a[le] - b.get(le, 0.0)) for le in a),
            total(after, f"{name}_count") - total(before, f"{name}_count"),
            total(after, f"{name}_sum") - total(before, f"{name}_sum"),
        )

    def quantile_bound(self, q: float) -> float:
        """The smallest bucket bound with at least ``q`` of the observations at or under it."""
        for le, cumulative in self.buckets:
            if cumulative >= q * self.count:
                return le
        return math.inf

    def quantile(self, q: float) -> float:
        """Linear interpolation inside the bucket, as PromQL's ``histogram_quantile`` does."""
        rank, lower, below = q * self.count, 0.0, 0.0
        for le, cumulative in self.buckets:
            if cumulative >= rank:
                if math.isinf(le):
                    return lower
                inside = cumulative - below
                return lower + (le - lower) * ((rank - below) / inside if inside else 1.0)
            lower, below = le, cumulative
        return math.nan

    def fraction_at_most(self, bound: float) -> float:
        for le, cumulative in self.buckets:
            if le == bound:
                return cumulative / self.count if self.count else math.nan
        return math.nan

    def describe(self) -> str:
        if not self.count:
            return "no observations"
        return (
            f"p50 ≈ {self.quantile(0.5) * 1000:.1f} ms, p99 ≈ {self.quantile(0.99) * 1000:.1f} ms "
            f"(p99 ≤ {self.quantile_bound(0.99):g} s bucket), max bucket ≤ {self.quantile_bound(1.0):g} s, "
            f"mean {self.sum / self.count * 1000:.1f} ms, n={self.count:.0f}"
        )


# ---- the service process ------------------------------------------------------------------------


class ServiceProcess:
    def __init__(
        self, workdir: Path, name: str, settings: dict[str, Any], *, profile: bool = False, launcher: str | None = None
    ) -> None:
        self.launcher = launcher
        self.name = name
        self.port = int(settings["http"]["port"])
        self.config = workdir / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump(settings))
        self.log = workdir / f"{name}.log"
        self.profile = workdir / f"{name}.prof" if profile else None
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServiceProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "POD_NAME": self.name}
        command = [sys.executable]
        if self.profile is not None:
            command += ["-m", "cProfile", "-o", str(self.profile)]
        command += [self.launcher] if self.launcher else ["-m", "autoscaler"]
        command += ["run", "--config", str(self.config)]
        with open(self.log, "ab") as log:
            self.started = time.monotonic()
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=ROOT
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (a graceful shutdown), SIGKILL if it takes too long."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def log_lines(self) -> Iterator[dict[str, Any]]:
        for raw in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                if isinstance(line, dict):
                    yield line


def service_settings(args: argparse.Namespace, prometheus_url: str, kubeconfig: Path) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "prometheus": {"url": prometheus_url},
        "kubernetes": {"kubeconfig": str(kubeconfig)},
        "sync": {"periodSeconds": args.period},
        "http": {"address": "127.0.0.1", "port": free_port()},
        "leaderElection": {"enabled": not args.no_leader_election, "leaseNamespace": "default"},
        "logging": {"format": "json", "level": args.log_level},
    }
    for assignment in args.set:
        path, _, text = assignment.partition("=")
        node = settings
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = yaml.safe_load(text)
    return settings


# ---- measuring ----------------------------------------------------------------------------------


@dataclass
class Snapshot:
    at: float
    service_cpu: float
    prometheus_cpu: float
    harness_cpu: float
    service_metrics: Samples
    prometheus_metrics: Samples
    api_counts: dict[str, int]


@dataclass
class Harness:
    args: argparse.Namespace
    emu: KubeEmulator
    prom: PrometheusSandbox
    session: aiohttp.ClientSession
    workdir: Path
    services: list[ServiceProcess] = field(default_factory=list)

    async def text(self, url: str) -> str:
        async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=30)) as response:
            response.raise_for_status()
            return await response.text()

    async def snapshot(self, service: ServiceProcess, *, start: bool) -> Snapshot:
        """At the start of a window the scrapes come first, at the end last: their cost stays outside."""
        assert self.prom.pid is not None
        if start:
            service_metrics = parse_metrics(await self.text(service.url + "/metrics"))
            prometheus_metrics = parse_metrics(await self.text(self.prom.url + "/metrics"))
        counts = self.emu.requests.counts()
        snap = Snapshot(
            time.monotonic(),
            cpu_seconds(service.pid),
            cpu_seconds(self.prom.pid),
            cpu_seconds(os.getpid()),
            {},
            {},
            counts,
        )
        if not start:
            service_metrics = parse_metrics(await self.text(service.url + "/metrics"))
            prometheus_metrics = parse_metrics(await self.text(self.prom.url + "/metrics"))
        snap.service_metrics, snap.prometheus_metrics = service_metrics, prometheus_metrics
        return snap

    def launch(self, name: str, kubeconfig: Path) -> ServiceProcess:
        settings = service_settings(self.args, self.prom.url, kubeconfig)
        service = ServiceProcess(
            self.workdir, name, settings, profile=self.args.profile and name != "idle", launcher=self.args.launcher
        )
        self.services.append(service)
        return service.start()

    async def wait_ready(self, service: ServiceProcess, limit: float) -> float:
        """Seconds from spawn to /readyz 200 (caches synced, leading, Prometheus answering)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if not service.alive():
                raise SystemExit(f"the service exited during start-up; log: {service.log}")
            with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                async with self.session.get(
                    service.url + "/readyz", timeout=aiohttp.ClientTimeout(total=2)
                ) as response:
                    if response.status == 200:
                        return time.monotonic() - service.started
            await asyncio.sleep(0.1)
        raise SystemExit(f"the service was not ready within {limit:g}s; log: {service.log}")


def status_writes(emu: KubeEmulator) -> set[str]:
    """Targets whose status the service has written (namespace/name), from the request log."""
    done = set()
    for record in emu.requests.find("patch", "scalingtargets/status"):
        if record.status is not None and 200 <= record.status < 300:
            done.add(f"{record.info.namespace}/{record.info.name}")
    return done


@dataclass
class Window:
    seconds: float
    periods: float
    service_cpu: float
    prometheus_cpu: float
    harness_cpu: float
    lag: Histogram
    reconcile: Histogram
    loop_lag: Histogram
    query_duration: Histogram
    service_queries: float
    server_queries: float
    reconciles: dict[str, float]
    gc_runs: dict[str, float]
    api: dict[str, int]
    rss_kib_max: int
    rss_kib_end: int
    prometheus_rss_kib: int

    @classmethod
    def between(cls, a: Snapshot, b: Snapshot, period: float, rss_max: int, rss_end: int, prom_rss: int) -> Window:
        seconds = b.at - a.at
        api = {k: v - a.api_counts.get(k, 0) for k, v in b.api_counts.items() if v - a.api_counts.get(k, 0)}

        def delta(samples_name: str, source: str = "service", **match: str) -> float:
            before = a.service_metrics if source == "service" else a.prometheus_metrics
            after = b.service_metrics if source == "service" else b.prometheus_metrics
            return total(after, samples_name, **match) - total(before, samples_name, **match)

        reconciles = {
            k: v - by_label(a.service_metrics, "autoscaler_reconciles_total", "result").get(k, 0.0)
            for k, v in by_label(b.service_metrics, "autoscaler_reconciles_total", "result").items()
        }
        gc_runs = {
            f"gen{k}": v - by_label(a.service_metrics, "python_gc_collections_total", "generation").get(k, 0.0)
            for k, v in by_label(b.service_metrics, "python_gc_collections_total", "generation").items()
        }
        return cls(
            seconds=seconds,
            periods=seconds / period,
            service_cpu=b.service_cpu - a.service_cpu,
            prometheus_cpu=b.prometheus_cpu - a.prometheus_cpu,
            harness_cpu=b.harness_cpu - a.harness_cpu,
            lag=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_schedule_lag_seconds"),
            reconcile=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_reconcile_duration_seconds"),
            loop_lag=Histogram.delta(a.service_metrics, b.service_metrics, "autoscaler_event_loop_lag_seconds"),
            query_duration=Histogram.delta(
                a.service_metrics, b.service_metrics, "autoscaler_prometheus_query_duration_seconds"
            ),
            service_queries=delta("autoscaler_prometheus_queries_total"),
            server_queries=delta("prometheus_http_requests_total", "prometheus", handler="/api/v1/query"),
            reconciles=reconciles,
            gc_runs=gc_runs,
            api=api,
            rss_kib_max=rss_max,
            rss_kib_end=rss_end,
            prometheus_rss_kib=prom_rss,
        )

    def per_period(self, value: float) -> float:
        return value / self.periods

    @property
    def writes(self) -> dict[str, int]:
        return {k: v for k, v in self.api.items() if k.split(" ")[0] in WRITE_VERBS}

    @property
    def lease_writes(self) -> int:
        return sum(v for k, v in self.writes.items() if k.split(" ")[1].startswith("leases"))

    @property
    def lists(self) -> int:
        return sum(v for k, v in self.api.items() if k.startswith("list "))

    def mcpu(self, cpu: float) -> float:
        return cpu / self.seconds * 1000


async def observe(
    harness: Harness, service: ServiceProcess, seconds: float, period: float | None = None
) -> tuple[Snapshot, Snapshot, int, int, int, list[int]]:
    """A measured window: snapshots at both ends, RSS sampled every second in between (and kept at the
    end of each ``period``, to show whether memory settles or keeps growing)."""
    assert harness.prom.pid is not None
    first = await harness.snapshot(service, start=True)
    rss_max = 0
    by_period: list[int] = []
    deadline = first.at + seconds
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(1.0, left))
        if not service.alive():
            raise SystemExit(f"the service died; log: {service.log}")
        rss = memory_kib(service.pid)["VmRSS"]
        rss_max = max(rss_max, rss)
        if period and time.monotonic() - first.at >= (len(by_period) + 1) * period - 0.5:
            by_period.append(rss)
    rss_end = memory_kib(service.pid)["VmRSS"]
    prom_rss = memory_kib(harness.prom.pid)["VmRSS"]
    last = await harness.snapshot(service, start=False)
    return first, last, max(rss_max, rss_end), rss_end, prom_rss, by_period


async def scrape_cost(harness: Harness, service: ServiceProcess, times: int = 3) -> tuple[float, int, int]:
    """CPU the service spends rendering one /metrics scrape (median of ``times``), bytes and series."""
    costs, size, series = [], 0, 0
    for _ in range(times):
        before = cpu_seconds(service.pid)
        text = await harness.text(service.url + "/metrics")
        await asyncio.sleep(0.05)
        costs.append(cpu_seconds(service.pid) - before)
        size, series = len(text), sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return sorted(costs)[len(costs) // 2], size, series


# ---- the run ------------------------------------------------------------------------------------


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    plan = layout(args.targets, args.pods, args.namespaces)
    pods_total = args.targets * args.pods
    result: dict[str, Any] = {
        "targets": args.targets,
        "pods": args.pods,
        "namespaces": args.namespaces,
        "period": args.period,
        "periods": args.periods,
        "overrides": args.set,
    }
    with MetricsExporter() as exporter:
        serve_load(exporter, plan)
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
                try:
                    await measure(harness, kubeconfig, plan, pods_total, result)
                finally:
                    for service in harness.services:
                        service.stop()
        finally:
            await asyncio.to_thread(prom.close)
    return result


async def measure(h: Harness, kubeconfig: Path, plan: list[Workload], pods_total: int, result: dict[str, Any]) -> None:
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
        code = idle.stop()
        progress(
            f"idle service: RSS {rss_end / 1024:.1f} MiB, {window.mcpu(window.service_cpu):.1f} mCPU (exit {code})"
        )
        h.emu.requests.reset()

    # 2. start-up.
    started = time.monotonic()
    seed_cluster(h.emu, plan)
    progress(
        f"seeded {len(plan):,} deployments, {pods_total:,} pods, {len(plan):,} targets "
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
    service = h.launch("service", kubeconfig)
    ready = await h.wait_ready(service, args.startup_timeout)
    progress(f"service pid {service.pid}: ready (caches synced) {ready:.1f}s after spawn")
    synced_rss = memory_kib(service.pid)
    while len(done := status_writes(h.emu)) < len(plan):
        if time.monotonic() - service.started > args.startup_timeout + 2 * args.period:
            raise SystemExit(f"only {len(done)} of {len(plan)} targets synced; log: {service.log}")
        if not service.alive():
            raise SystemExit(f"the service died; log: {service.log}")
        await asyncio.sleep(0.2)
    first_pass = time.monotonic() - service.started
    startup_cpu = cpu_seconds(service.pid)
    startup_memory = memory_kib(service.pid)
    startup_api = h.emu.requests.counts()
    progress(f"first full pass {first_pass:.1f}s after spawn; measuring {args.periods} periods of {args.period:g}s")
    result["startup"] = {
        "ready_s": ready,
        "first_pass_s": first_pass,
        "cpu_s": startup_cpu,
        "rss_at_ready_mib": synced_rss["VmRSS"] / 1024,
        "rss_after_first_pass_mib": startup_memory["VmRSS"] / 1024,
        "peak_rss_mib": startup_memory["VmHWM"] / 1024,
        "api": startup_api,
    }

    # 3. the steady window.
    if args.settle:
        await asyncio.sleep(args.settle)
    first, last, rss_max, rss_end, prom_rss, by_period = await observe(
        h, service, args.periods * args.period, args.period
    )
    window = Window.between(first, last, args.period, rss_max, rss_end, prom_rss)
    result["steady"] = window
    result["rss_by_period_mib"] = [round(kib / 1024, 1) for kib in by_period]
    result["peak_rss_mib"] = memory_kib(service.pid)["VmHWM"] / 1024
    cost, size, series = await scrape_cost(h, service)
    result["scrape"] = {"cpu_s": cost, "bytes": size, "series": series}

    # 4. checks: every target synced every period, nothing scaled, every target active with both metrics read.
    problems: list[str] = []
    syncs, expected = sum(window.reconciles.values()), len(plan) * window.periods
    if syncs < 0.97 * expected:  # a sync pushed past its tick is skipped: the CPU figure would flatter
        problems.append(f"only {syncs:.0f} syncs in the window, {expected:.0f} expected: targets missed ticks")
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
    warnings = Counter(
        str(line.get("event")) for line in service.log_lines() if line.get("level") in ("warning", "error", "critical")
    )
    if warnings:
        problems.append(f"service log warnings/errors: {dict(warnings.most_common(5))}")
    result["problems"] = problems
    result["exit_code"] = service.stop()


# ---- the report ---------------------------------------------------------------------------------


def verbs(api: Mapping[str, float], per: float) -> str:
    parts = [f"{k} {v / per:.2f}" for k, v in sorted(api.items())]
    return ", ".join(parts) if parts else "none"


def report(result: dict[str, Any]) -> str:
    w: Window = result["steady"]
    n = result["targets"]
    per_k = 1000 / n
    s = result["startup"]
    lines = [
        f"Service benchmark: {n:,} targets × {result['pods']} pods ({n * result['pods']:,} pods) in "
        f"{result['namespaces']} namespaces, 2 metrics each; sync period {result['period']:g} s; "
        f"steady window {w.seconds:.1f} s = {w.periods:.2f} periods"
        + (f"; overrides {result['overrides']}" if result["overrides"] else ""),
        "",
        "| figure | value | goal |",
        "|---|---|---|",
    ]

    def row(name: str, value: str, goal: str = "") -> None:
        lines.append(f"| {name} | {value} | {goal} |")

    p99_bound = w.lag.quantile_bound(0.99)
    row(
        "scheduling lag p99 (steady)",
        f"≈ {w.lag.quantile(0.99) * 1000:.1f} ms (≤ {p99_bound:g} s bucket; "
        f"{w.lag.fraction_at_most(1.0) * 100:.2f} % ≤ 1 s)",
        "< 1 s",
    )
    row(
        "scheduling lag p50 / mean",
        f"≈ {w.lag.quantile(0.5) * 1000:.1f} ms / {w.lag.sum / max(w.lag.count, 1) * 1000:.1f} ms",
        "",
    )
    row(
        "sync duration p50 / p99",
        f"≈ {w.reconcile.quantile(0.5) * 1000:.0f} ms / "
        f"≈ {w.reconcile.quantile(0.99) * 1000:.0f} ms (≤ {w.reconcile.quantile_bound(0.99):g} s bucket)",
        "",
    )
    row(
        "event-loop lag p99",
        f"≈ {w.loop_lag.quantile(0.99) * 1000:.1f} ms (≤ {w.loop_lag.quantile_bound(0.99):g} s bucket)",
        "",
    )
    row("syncs in window", f"{sum(w.reconciles.values()):.0f} ({verbs(w.reconciles, 1)})", f"≈ {n * w.periods:.0f}")
    mcpu = w.mcpu(w.service_cpu)
    row("service CPU", f"{mcpu:.1f} mCPU = **{mcpu * per_k:.1f} mCPU per 1,000 targets**", "≤ 25 mCPU / 1,000")
    row("service's cyclic GC runs in the window", verbs(w.gc_runs, 1), "")
    row(
        "service RSS (end of window / max in window)",
        f"{w.rss_kib_end / 1024:.1f} / {w.rss_kib_max / 1024:.1f} MiB",
        "≤ 120 MiB",
    )
    if "idle" in result:
        idle = result["idle"]
        row("idle service RSS (0 targets)", f"{idle['rss_mib']:.1f} MiB ({idle['mcpu']:.1f} mCPU)", "")
        row("RSS above idle", f"{w.rss_kib_end / 1024 - idle['rss_mib']:.1f} MiB", "≤ 40 MiB")
    row("service RSS at the end of each period", " · ".join(f"{m:g}" for m in result["rss_by_period_mib"]) + " MiB", "")
    row("service peak RSS (VmHWM, start-up included)", f"{result['peak_rss_mib']:.1f} MiB", "")
    row("Prometheus queries per sync (service)", f"{w.per_period(w.service_queries):.1f}", "")
    row("Prometheus /api/v1/query per sync (server)", f"{w.per_period(w.server_queries):.1f}", "")
    row("Prometheus query duration", w.query_duration.describe(), "")
    row("Kubernetes API calls per sync, by verb", verbs(w.api, w.periods), "")
    row("LIST calls per steady sync", f"{w.per_period(w.lists):.2f}", "0")
    writes = sum(w.writes.values())
    row("writes per steady sync (all)", f"{w.per_period(writes):.2f} ({verbs(w.writes, w.periods)})", "")
    row("writes per steady sync, leader-election lease excluded", f"{w.per_period(writes - w.lease_writes):.2f}", "0")
    row("start-up: spawn → caches synced (/readyz)", f"{s['ready_s']:.1f} s", "")
    row("start-up: spawn → every target synced once", f"{s['first_pass_s']:.1f} s", "")
    row("start-up: service CPU to first full pass", f"{s['cpu_s']:.1f} s", "")
    row(
        "start-up: RSS at ready / after first pass / peak",
        f"{s['rss_at_ready_mib']:.1f} / {s['rss_after_first_pass_mib']:.1f} / {s['peak_rss_mib']:.1f} MiB",
        "",
    )
    startup_lists = {k: v for k, v in s["api"].items() if k.startswith("list ")}
    row("start-up: LIST calls", verbs(startup_lists, 1), "")
    row(
        "one /metrics scrape of the service",
        f"{result['scrape']['cpu_s'] * 1000:.0f} ms CPU, "
        f"{result['scrape']['series']:,} series, {result['scrape']['bytes'] / 1024:.0f} KiB",
        "",
    )
    row(
        "others (same 2 cores): Prometheus",
        f"{w.mcpu(w.prometheus_cpu):.0f} mCPU, RSS {w.prometheus_rss_kib / 1024:.0f} MiB",
        "",
    )
    row("others: emulator + exporter + harness (one process)", f"{w.mcpu(w.harness_cpu):.0f} mCPU", "")
    lines.append("")
    lines.append(f"service exit code: {result['exit_code']}")
    passed = (
        "all passed (every target synced every period; no Deployment scaled; every target ScalingActive "
        "with 2 metrics and proposing its current count; no warnings in the log)"
    )
    lines.append("checks: " + ("; ".join(result["problems"]) if result["problems"] else passed))
    return "\n".join(lines)


def as_json(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    w: Window = out.pop("steady")
    out["steady"] = {
        "seconds": w.seconds,
        "periods": w.periods,
        "service_mcpu": w.mcpu(w.service_cpu),
        "prometheus_mcpu": w.mcpu(w.prometheus_cpu),
        "harness_mcpu": w.mcpu(w.harness_cpu),
        "lag_p99_s": w.lag.quantile(0.99),
        "lag_p99_bound_s": w.lag.quantile_bound(0.99),
        "lag_buckets": w.lag.buckets,
        "reconcile_p99_s": w.reconcile.quantile(0.99),
        "loop_lag_p99_s": w.loop_lag.quantile(0.99),
        "rss_end_mib": w.rss_kib_end / 1024,
        "rss_max_mib": w.rss_kib_max / 1024,
        "service_queries_per_sync": w.per_period(w.service_queries),
        "server_queries_per_sync": w.per_period(w.server_queries),
        "api_per_sync": {k: v / w.periods for k, v in w.api.items()},
        "reconciles": w.reconciles,
    }
    return out


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10, help="pods per target")
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--periods", type=int, default=4, help="sync periods in the steady window")
    parser.add_argument("--period", type=float, default=15.0, help="sync.periodSeconds (default 15)")
    parser.add_argument("--scrape-interval", type=float, default=1.0, help="Prometheus' scrape interval")
    parser.add_argument(
        "--settle", type=float, default=0.0, help="seconds between the first full pass and the steady window"
    )
    parser.add_argument("--idle-seconds", type=float, default=15.0, help="length of the idle measurement")
    parser.add_argument("--no-idle", action="store_true", help="skip the idle-service baseline")
    parser.add_argument("--no-leader-election", action="store_true")
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
