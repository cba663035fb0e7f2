"""Series shaped like the ones prometheus-adapter's rules in data/adapter-config.yaml serve, at fixed
times: counters rising at known rates and gauges, for the target's pods, for other pods of its
namespace, and for a pod of the same name in another namespace (none of which may leak in)."""

from __future__ import annotations

from collections.abc import Callable

from autoscaler_sandbox.history import OpenMetricsHistory

T_END = 1_700_000_000.0
STEP = 15
START = T_END - 600

# (labels, per-second rate) of each counter, (labels, value) of each gauge.
HTTP = [
    ({"namespace": "shop", "pod": "web-1", "verb": "GET"}, 2.5),
    ({"namespace": "shop", "pod": "web-1", "verb": "POST"}, 1.0),
    ({"namespace": "shop", "pod": "web-2", "verb": "GET"}, 4.0),
    ({"namespace": "shop", "pod": "db-0", "verb": "GET"}, 7.0),
    ({"namespace": "other", "pod": "web-1", "verb": "GET"}, 100.0),
]
SESSIONS = [
    ({"kubernetes_namespace": "shop", "kubernetes_pod_name": "web-1"}, "12"),
    ({"kubernetes_namespace": "shop", "kubernetes_pod_name": "web-2"}, "30"),
    ({"kubernetes_namespace": "other", "kubernetes_pod_name": "web-2"}, "999"),
]
INGRESS = [
    ({"namespace": "shop", "ingress": "main-route"}, 40.0),
    ({"namespace": "shop", "ingress": "other-route"}, 5.0),
    ({"namespace": "other", "ingress": "main-route"}, 1000.0),
]
QUEUE = [
    ({"namespace": "shop", "queue": "jobs"}, "42"),
    ({"namespace": "shop", "queue": "mail"}, "7"),
    ({"namespace": "other", "queue": "jobs"}, "1000"),
]
CPU = [
    ({"namespace": "shop", "pod": "web-1", "container": "app"}, 0.25),
    ({"namespace": "shop", "pod": "web-1", "container": "sidecar"}, 0.05),
    ({"namespace": "shop", "pod": "web-1", "container": ""}, 0.3),  # cAdvisor's pod-level cgroup
    ({"namespace": "shop", "pod": "web-1", "container": "POD"}, 0.001),
    ({"namespace": "shop", "pod": "web-2", "container": "app"}, 0.5),
    ({"namespace": "other", "pod": "web-2", "container": "app"}, 3.0),
]
# jvm_threads_live_threads / jvm_threads_peak_threads: the adapter serves them as jvm_threads_live and
# jvm_threads_peak through an alternation capture (tests/convert/test_alternation.py).
JVM_THREADS = [
    ({"namespace": "shop", "pod": "web-1"}, "live", "17"),
    ({"namespace": "shop", "pod": "web-2"}, "live", "23"),
    ({"namespace": "shop", "pod": "web-1"}, "peak", "40"),
    ({"namespace": "shop", "pod": "web-2"}, "peak", "44"),
]
MEMORY = [
    ({"namespace": "shop", "pod": "web-1", "container": "app"}, "104857600"),
    ({"namespace": "shop", "pod": "web-2", "container": "app"}, "209715200"),
    ({"namespace": "shop", "pod": "web-2", "container": ""}, "309715200"),
]


def _times() -> list[float]:
    return [START + k * STEP for k in range(int((T_END - START) / STEP) + 1)]


def add_series(history: OpenMetricsHistory) -> None:
    for at in _times():
        for family, counters in (
            ("http_requests_total", HTTP),
            ("nginx_ingress_controller_requests", INGRESS),
            ("container_cpu_usage_seconds_total", CPU),
        ):
            for labels, rate in counters:
                history.add(family, labels, at, f"{rate * (at - START):.6f}")
        for family, gauges in (
            ("app_sessions", SESSIONS),
            ("queue_messages_ready", QUEUE),
            ("container_memory_working_set_bytes", MEMORY),
        ):
            for labels, value in gauges:
                history.add(family, labels, at, value)
        for labels, kind, value in JVM_THREADS:
            history.add(f"jvm_threads_{kind}_threads", labels, at, value)


def backfill_text(*more: Callable[[OpenMetricsHistory], None]) -> str:
    history = OpenMetricsHistory()
    add_series(history)
    for add in more:
        add(history)
    return history.text()
