"""The monitoring assets against the real thing: a Prometheus scraping a running ``autoscaler run`` evaluates
every expression of the PrometheusRule and of the dashboard, and each names only series the service exports.

The service runs two targets, one that scales and one whose query Prometheus refuses, so that the event and
error counters have series and the "metrics failing" alert has something to find.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget
from kube_emulator import KubeEmulator
from tests.e2e.conftest import until
from tests.e2e.test_service_e2e import QUEUE, set_load, target
from tests.monitoring import alerts, dashboard_expressions, metric_names
from tests.service.cluster import condition, deployment, status_of

pytestmark = pytest.mark.prometheus


def exported_names(exposition: str) -> set[str]:
    """Every series name the exposition holds or declares (a labelled family without children yet counts)."""
    names: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        if family.type == "histogram":
            names.update(f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count"))
    return names


def broken_target() -> dict[str, Any]:
    broken = target("broken", "broken")
    metric = copy.deepcopy(QUEUE)
    metric["external"]["query"] = "sum(queue_depth{"  # Prometheus answers 400 bad_data
    broken["spec"]["metrics"] = [metric]
    return broken


async def test_every_rule_and_panel_expression_reads_the_running_service(
    cluster: KubeEmulator, prometheus: PrometheusSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 40, prometheus)  # web: 40 / 10 per pod -> a scale from 2 to 4
    for name in ("web", "broken"):
        cluster.create(deployment(name, 2))
    cluster.create(target("web", "web"))
    cluster.create(broken_target())
    service = services("one", cluster, prometheus)
    await until(lambda: status_of(cluster, "web").get("currentReplicas") == 4, what="web scaled to 4")
    await until(
        lambda: (condition(status_of(cluster, "broken"), "ScalingActive") or {}).get("status") == "False",
        what="the broken target's failure",
    )
    port = next(line["port"] for line in service.lines() if line.get("event") == "http.started")
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        exported = exported_names(await response.text())

    expressions = {f"alert {name}": expr for name, expr in alerts().items()} | {
        f"panel {title}": expr for title, expr in dashboard_expressions().items()
    }
    unknown = {
        where: sorted(metric_names(expr) - exported)
        for where, expr in expressions.items()
        if metric_names(expr) - exported
    }
    assert not unknown, f"names the service does not export: {unknown}"

    # The emulator serves the service from this event loop: the blocking sandbox calls go to a thread.
    watcher = PrometheusSandbox(
        scrape_targets=[ScrapeTarget(f"127.0.0.1:{port}", job="autoscaler")], scrape_interval=1.0
    )
    await watcher.astart()
    try:
        await asyncio.to_thread(watcher.wait_for, 'autoscaler_target_condition{name="broken"}', timeout=30)
        # Rates need two scrapes of a counter; failures have been counted since the service started.
        await asyncio.to_thread(watcher.wait_for, "rate(autoscaler_prometheus_errors_total[5m]) > 0", timeout=30)
        results = {where: await asyncio.to_thread(watcher.query, expr) for where, expr in expressions.items()}
    finally:
        await watcher.astop()
        await asyncio.to_thread(watcher.close)
    failed = {where: result for where, result in results.items() if result.get("status") != "success"}
    assert not failed, failed
    empty = sorted(where for where, result in results.items() if not result["data"]["result"])
    # Alerts that should be quiet now, and per-target panels whose state did not occur, are empty; the rest
    # must find the service's series (a misspelt label would leave them empty too).
    quiet = {
        "alert AutoscalerNoLeader",
        "alert AutoscalerCacheStale",
        "alert AutoscalerCacheRelisting",
        "alert AutoscalerPrometheusDegraded",
        "alert AutoscalerTargetAtMaxReplicas",
        "alert AutoscalerTargetLimited",
        "alert AutoscalerTargetNotSynced",
        "alert AutoscalerEventLoopLag",
        "alert AutoscalerLeaseRenewalsLate",
        "alert AutoscalerWritesBackingOff",
        "alert AutoscalerClockSkew",
        "alert AutoscalerTargetPausedTooLong",  # no target is paused here
        # The aggregate forms speak only past metrics.perTargetSeriesLimit (tests/test_monitoring.py).
        "alert AutoscalerTargetsMetricsFailing",
        "alert AutoscalerTargetsNotSynced",
        "alert AutoscalerTargetsWritesBackingOff",
        "alert AutoscalerTargetsPausedTooLong",
    }
    assert set(empty) <= quiet | {"panel Limited by / A", "panel Sync errors by reason / A"}, empty
    failing = results["alert AutoscalerTargetMetricsFailing"]["data"]["result"]
    assert [series["metric"]["name"] for series in failing] == ["broken"]
    assert results["alert AutoscalerPrometheusErrors"]["data"]["result"][0]["metric"]["kind"] == "bad_query"
