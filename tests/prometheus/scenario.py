"""The data the real-Prometheus tests read: what the exporter serves, what promtool backfills,
the targets that read them, and the values they must produce."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.core.spec import (
    CrossVersionObjectReference,
    MetricSourceType,
    MetricSpec,
    MetricTarget,
    MetricTargetType,
)
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.values.quantity import Quantity
from autoscaler_sandbox import MetricsExporter

CPU_WINDOW = "5s"
CPU = "container_cpu_usage_seconds_total"
MEMORY = "container_memory_working_set_bytes"

# (namespace, pod, container) → CPU cores (binary fractions, so Prometheus' rate() stays exact).
CPU_RATES = {
    ("shop", "web-1", "app"): 0.25,
    ("shop", "web-1", "sidecar"): 0.125,
    ("shop", "web-1", "POD"): 0.5,
    ("shop", "web-1", ""): 0.875,  # pause and pod-level: excluded
    ("shop", "web-2", "app"): 0.5,
    ("shop", "web-3", "app"): 0.75,
    ("shop", "other-1", "app"): 2.0,  # another workload in the same namespace
    ("blog", "api-1", "app"): 1.0,
    ("blog", "api-2", "app"): 0.375,
}
MEMORY_BYTES = {
    ("shop", "web-1", "app"): "104857600",
    ("shop", "web-1", "sidecar"): "2097152",
    ("shop", "web-1", "POD"): "999",
    ("shop", "web-1", ""): "106955751",
    ("shop", "web-2", "app"): "52428800",
    ("shop", "web-3", "app"): "1",
    ("shop", "other-1", "app"): "7",
    ("blog", "api-1", "app"): "1073741824",
    ("blog", "api-2", "app"): "3",
}
# Custom per-pod gauges: metric → {(namespace, pod, extra labels...): value text}
POD_GAUGES: dict[str, dict[tuple[str, str], str]] = {
    "http_rps": {
        ("shop", "web-1"): "0.3",
        ("shop", "web-2"): "1.5",
        ("shop", "web-3"): "12",
        ("shop", "other-1"): "1000",
        ("blog", "api-1"): "7",
        ("blog", "api-2"): "0.001",
    },
    "bad_rps": {("shop", "web-1"): "NaN", ("shop", "web-2"): "+Inf", ("shop", "web-3"): "2", ("blog", "api-1"): "-Inf"},
    "partial_rps": {("shop", "web-1"): "1", ("shop", "web-2"): "2"},
    "stale_rps": {("shop", "web-1"): "1", ("shop", "web-2"): "2"},
}
NASTY_VALUES = ('a"b', "a\\b", 'x"} or vector(1) or {a="', "pod.*", "a|b", "new\nline", "ünï", "$^", "(", "]")


def populate(exporter: MetricsExporter) -> None:
    for (namespace, pod, container), rate in CPU_RATES.items():
        exporter.set_rate(CPU, {"namespace": namespace, "pod": pod, "container": container}, rate)
    for (namespace, pod, container), value in MEMORY_BYTES.items():
        exporter.set(MEMORY, {"namespace": namespace, "pod": pod, "container": container}, value)
    for name, series in POD_GAUGES.items():
        for (namespace, pod), value in series.items():
            exporter.set(name, {"namespace": namespace, "pod": pod}, value)
    exporter.set("dup_rps", {"namespace": "shop", "pod": "web-1", "path": "/a"}, "1")
    exporter.set("dup_rps", {"namespace": "shop", "pod": "web-1", "path": "/b"}, "2")
    exporter.set("dup_rps", {"namespace": "shop", "pod": "web-2", "path": "/a"}, "5")
    for pod, app, tier, value in (
        ("web-1", "web", "front", "10"),
        ("web-2", "web", "back", "20"),
        ("web-3", "web", "batch", "30"),
        ("other-1", "other", "front", "40"),
    ):
        exporter.set("selector_rps", {"namespace": "shop", "pod": pod, "app": app, "tier": tier}, value)
    exporter.set("queue_depth", {"queue": "orders"}, "42")
    exporter.set("queue_depth", {"queue": "billing"}, "8.5")
    exporter.set("nan_gauge", {}, "NaN")
    exporter.set("inf_gauge", {}, "+Inf")
    for index, value in enumerate(NASTY_VALUES):
        exporter.set("nasty", {"pod": value, "index": str(index)}, str(index))


def ref(name: str) -> CrossVersionObjectReference:
    return CrossVersionObjectReference(kind="Deployment", name=name, api_version="apps/v1")


def cpu_metric() -> MetricSpec:
    return MetricSpec(
        MetricSourceType.RESOURCE, "cpu", MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50)
    )


def memory_metric() -> MetricSpec:
    return MetricSpec(
        MetricSourceType.RESOURCE,
        "memory",
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("100Mi")),
    )


def container_cpu_metric(container: str) -> MetricSpec:
    return MetricSpec(
        MetricSourceType.CONTAINER_RESOURCE,
        "cpu",
        MetricTarget(MetricTargetType.UTILIZATION, average_utilization=50),
        container=container,
    )


def pods_metric(query: str, name: str = "rps") -> MetricSpec:
    return MetricSpec(
        MetricSourceType.PODS,
        name,
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("1")),
        query=query,
    )


def external_metric(query: str, name: str = "queue") -> MetricSpec:
    return MetricSpec(
        MetricSourceType.EXTERNAL,
        name,
        MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10")),
        query=query,
    )


def object_metric(query: str, name: str = "queue") -> MetricSpec:
    return MetricSpec(
        MetricSourceType.OBJECT,
        name,
        MetricTarget(MetricTargetType.VALUE, value=Quantity.parse("10")),
        described_object=CrossVersionObjectReference("Service", "orders", "v1"),
        query=query,
    )


def web(metrics: Sequence[MetricSpec], pods: Sequence[str] = ("web-1", "web-2", "web-3")) -> TargetQuery:
    return TargetQuery("shop", "web-hpa", ref("web"), "app=web,tier in (front,back)", tuple(pods), tuple(metrics))


def api(metrics: Sequence[MetricSpec], pods: Sequence[str] = ("api-1", "api-2")) -> TargetQuery:
    return TargetQuery("blog", "api-hpa", ref("api"), "app=api", tuple(pods), tuple(metrics))


def rps_query(metric: str) -> str:
    return f"sum by (namespace, pod) ({metric}{{<<scope>>}})"


# -- backfilled data (promtool), queried at fixed times --------------------------------------------

T0 = 1_700_000_000.0
BACKFILL_STEP = 15
BACKFILL_CPU_WINDOW = "1m"
BACKFILL_CPU = {
    ("shop", "web-1", "app"): 0.25,
    ("shop", "web-1", "sidecar"): 0.125,
    ("shop", "web-1", "POD"): 0.5,
    ("shop", "web-2", "app"): 0.5,
}


def backfill_openmetrics() -> str:
    """OpenMetrics for promtool: 10 minutes before T0 at 15 s steps (families contiguous, times ascending)."""
    times = [T0 - 600 + BACKFILL_STEP * i for i in range(600 // BACKFILL_STEP + 1)]
    lines = [f"# TYPE {CPU} gauge"]
    for (namespace, pod, container), rate in BACKFILL_CPU.items():
        for t in times:
            # An exact binary value: rate × (seconds since an hour before T0).
            lines.append(
                f'{CPU}{{namespace="{namespace}",pod="{pod}",container="{container}"}} '
                f"{rate * (t - T0 + 3600)!r} {t:.0f}"
            )
    lines.append("# TYPE http_rps gauge")
    for pod, value in (("web-1", "0.3"), ("web-2", "1.5")):
        for t in times:
            lines.append(f'http_rps{{namespace="shop",pod="{pod}"}} {value} {t:.0f}')
    lines.append("# TYPE old_rps gauge")
    for t in times:
        if t <= T0 - 400:  # older than the 5 m lookback at T0: stale
            lines.append(f'old_rps{{namespace="shop",pod="web-1"}} 1 {t:.0f}')
    for t in times:
        if t > T0 - 400:
            lines.append(f'old_rps{{namespace="shop",pod="web-2"}} 2 {t:.0f}')
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
