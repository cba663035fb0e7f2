"""The benchmark's peers' pattern (bench/servicebench/peers.py, issue 41 item 1): the queries an HPA with
prometheus-adapter and KEDA would send for the bench's targets, as upstream renders them; the engine-time and
ratio arithmetic; and, against a real Prometheus scraping the bench's exporter, every query answering the served
rate and a short run of the querier answering all it planned."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget
from tests.bench_modules import servicebench
from tests.guard import REQUIRE_SERVERS, missing_binaries


@pytest.fixture(scope="module")
def peers() -> Iterator[ModuleType]:
    with servicebench("peers") as module:
        yield module


@pytest.fixture(scope="module")
def cluster() -> Iterator[ModuleType]:
    with servicebench("cluster") as module:
        yield module


def test_the_adapter_queries_are_its_rendered_resource_and_pods_rules(peers: ModuleType, cluster: ModuleType) -> None:
    web = cluster.Workload("team-000", "web", ("web-5d-00000", "web-5d-00001"))
    solo = cluster.Workload("team-001", "solo", ("solo-7f-00000",))
    assert peers.peer_queries([web, solo], "adapter") == [
        'sum by (pod,container) (irate (container_cpu_usage_seconds_total{namespace="team-000",'
        'pod=~"web-5d-00000|web-5d-00001",container!="",pod!=""}[4m]))',
        'sum by (pod,container) (container_memory_working_set_bytes{namespace="team-000",'
        'pod=~"web-5d-00000|web-5d-00001",container!="",pod!=""})',
        'sum(rate(http_requests_total{namespace="team-000",pod=~"web-5d-00000|web-5d-00001"}[2m])) by (pod)',
        # One pod: the adapter's LabelEq, not a regex.
        'sum by (pod,container) (irate (container_cpu_usage_seconds_total{namespace="team-001",'
        'pod="solo-7f-00000",container!="",pod!=""}[4m]))',
        'sum by (pod,container) (container_memory_working_set_bytes{namespace="team-001",'
        'pod="solo-7f-00000",container!="",pod!=""})',
        'sum(rate(http_requests_total{namespace="team-001",pod="solo-7f-00000"}[2m])) by (pod)',
    ]


def test_the_keda_queries_are_one_instant_query_per_trigger(peers: ModuleType, cluster: ModuleType) -> None:
    web = cluster.Workload("team-000", "web", ("web-5d-00000", "web-5d-00001"))
    assert peers.peer_queries([web], "keda") == [
        'sum(rate(container_cpu_usage_seconds_total{namespace="team-000",pod=~"web-.*",container!=""}[2m]))',
        'sum(rate(http_requests_total{namespace="team-000",pod=~"web-.*"}[2m]))',
    ]
    with pytest.raises(ValueError, match="unknown pattern"):
        peers.peer_queries([web], "hpa")


def test_each_query_selects_exactly_its_targets_pods(peers: ModuleType, cluster: ModuleType) -> None:
    """PromQL regexes are anchored at both ends: a target's pod matcher, the adapter's list as KEDA's name
    pattern, matches its own pods and no other pod of its namespace (svc-1000's pattern and svc-10000's pods,
    the bystanders' pods)."""
    plan = [w for w in cluster.layout(10_001, 3, 1) if w.name in ("svc-0001", "svc-0010", "svc-1000", "svc-10000")]
    pods = {pod for w in [*plan, *cluster.bystanders(6, 3, 1)] for pod in w.pods}
    for pattern in peers.PATTERNS:
        queries = peers.peer_queries(plan, pattern)
        per_target = len(queries) // len(plan)
        for index, w in enumerate(plan):
            for query in queries[index * per_target : (index + 1) * per_target]:
                assert f'namespace="{w.namespace}"' in query
                [regex] = re.findall(r'pod=~"([^"]*)"', query)
                assert {pod for pod in pods if re.fullmatch(regex, pod)} == set(w.pods), (pattern, query)


ENGINE_TEXT = """# TYPE prometheus_engine_query_duration_seconds summary
prometheus_engine_query_duration_seconds{{slice="inner_eval",quantile="0.5"}} 0.5
prometheus_engine_query_duration_seconds_sum{{slice="inner_eval"}} {inner}
prometheus_engine_query_duration_seconds_count{{slice="inner_eval"}} 10
prometheus_engine_query_duration_seconds_sum{{slice="prepare_time"}} {prepare}
prometheus_engine_query_duration_seconds_count{{slice="prepare_time"}} 10
prometheus_engine_query_duration_seconds_sum{{slice="queue_time"}} {queue}
prometheus_engine_query_duration_seconds_count{{slice="queue_time"}} 10
prometheus_engine_query_duration_seconds_sum{{slice="result_sort"}} {sort}
prometheus_engine_query_duration_seconds_count{{slice="result_sort"}} 0
"""


def test_engine_seconds_sum_the_work_slices_and_leave_the_queue_apart(peers: ModuleType) -> None:
    samples = servicebench_samples()
    before = samples.parse_metrics(ENGINE_TEXT.format(inner=1.0, prepare=2.0, queue=5.0, sort=0.0))
    after = samples.parse_metrics(ENGINE_TEXT.format(inner=1.25, prepare=2.5, queue=9.0, sort=0.125))
    assert peers.engine_seconds(before, after) == pytest.approx(0.875)  # quantiles and queue_time not summed
    assert peers.queue_seconds(before, after) == pytest.approx(4.0)


def servicebench_samples() -> ModuleType:
    with servicebench("samples") as module:
        return module


def test_the_ratio_takes_the_baseline_off_both_sides(peers: ModuleType) -> None:
    baseline = peers.reads_figures(10.0, 5.0, 2, 1.0, 0.0, 0)  # 0.1 CPU s/s: the scrapes
    service = peers.reads_figures(20.0, 5.0, 4, 2.4, 0.04, 8)  # 0.1 CPU s a period above the scrapes
    pattern = {**peers.reads_figures(20.0, 5.0, 4, 6.0, 0.8, 400), "answered": 400, "planned": 400, "kept_up": True}
    r = peers.ratio(service, pattern, baseline)
    assert r["service_cpu_per_period_s"] == pytest.approx(0.1)
    assert r["pattern_cpu_per_period_s"] == pytest.approx(1.0)
    assert r["cpu"] == pytest.approx(0.1) and r["engine"] == pytest.approx(0.05)
    assert r["met"] and r["complete"] and r["kept_up"]

    dearer = peers.reads_figures(20.0, 5.0, 4, 2.8, 0.04, 8)
    r = peers.ratio(dearer, pattern, baseline)
    assert r["cpu"] == pytest.approx(0.2) and not r["met"]

    # Under the baseline (noise) counts as nothing; a pattern that lost queries is flagged.
    quiet = peers.reads_figures(20.0, 5.0, 4, 1.9, 0.0, 8)
    partial = {**pattern, "answered": 390, "kept_up": False}
    r = peers.ratio(quiet, partial, baseline)
    assert r["cpu"] == 0.0 and r["met"] and not r["complete"] and not r["kept_up"]
    # A pattern the querier could not deliver costs, a period, its answered queries' each times the whole load:
    # 390 answered for 4.0 CPU s above the baseline over 4 periods' window, 100 a period planned.
    assert peers.whole_load(partial, baseline)[0] == pytest.approx(4.0 / 390 * 100)
    assert peers.ratio(dearer, partial, baseline)["cpu"] == pytest.approx(0.2 / (4.0 / 390 * 100))
    # The engine's time is shown, never judged: it is wall time.
    slow_engine = peers.reads_figures(20.0, 5.0, 4, 2.4, 4.0, 8)
    r = peers.ratio(slow_engine, pattern, baseline)
    assert r["engine"] == pytest.approx(5.0) and r["met"]

    cpu, engine = peers.above_baseline(partial, baseline)
    reported = {
        **partial,
        "cpu_above_baseline_per_period_s": cpu,
        "engine_above_baseline_per_period_s": engine,
        "failed": 10,
        "late": 0,
        "sent_after_period": 3,
        "latency_p50_s": 0.002,
        "latency_p99_s": 0.01,
    }
    result = {
        "baseline": baseline,
        "patterns": {"adapter": reported},
        "queries_per_period": {"adapter": 100},
        "period": 5.0,
        "concurrency": 16,
        "timeout_s": 10.0,
    }
    text = "\n".join(peers.peers_report(result, dearer))
    assert "| HPA + prometheus-adapter | 100 |" in text and "390/400" in text and "no (3 sent" in text
    assert "| the service's reads (steady window) | 2 | 700.0 | 200.0 | 10.0 |" in text
    # The pattern's whole load: 390 queries answered for 4.0 CPU s above the baseline, 100 a period.
    assert "| 1,025.6 |" in text
    assert "0.195 (1/5)" in text and "MISSED" in text and "delivered 390 of the pattern's 400 queries" in text
    assert "no ratio" in "\n".join(peers.peers_report(result, None))


def require_prometheus() -> None:
    missing = missing_binaries("prometheus", "promtool")
    if missing:
        if REQUIRE_SERVERS:
            pytest.fail("; ".join(missing))
        pytest.skip("; ".join(missing))


def history(plan: list[Any], address: str, origin: float, rates: dict[str, float], seconds: int) -> str:
    """The exporter's counters over the ``seconds`` before now, one sample a second, as the sandbox's scrape
    labels them (job, instance): ``rate(…[2m])`` reads the served rate from the first scrape on, not after 2
    minutes of scraping."""
    now = int(time.time())
    lines: list[str] = []
    for metric, per_second in rates.items():
        lines.append(f"# TYPE {metric} gauge")
        for w in plan:
            for pod in w.pods:
                container = ',container="app"' if metric.startswith("container_") else ""
                labels = f'namespace="{w.namespace}",pod="{pod}"{container},job="sandbox",instance="{address}"'
                lines.extend(
                    f"{metric}{{{labels}}} {per_second * (t - origin)!r} {t}" for t in range(now - seconds, now)
                )
    return "\n".join(lines) + "\n# EOF\n"


@pytest.mark.prometheus
async def test_against_a_real_prometheus_every_query_reads_the_served_rate_and_the_querier_answers_all(
    peers: ModuleType, cluster: ModuleType
) -> None:
    require_prometheus()
    plan = cluster.layout(3, 4, 2)
    with MetricsExporter() as exporter:
        cluster.serve_load(exporter, plan)
        origin = time.time() - 3600  # serve_load's origin, a few microseconds earlier: no counter reset between
        rates = {
            "container_cpu_usage_seconds_total": cluster.CPU_USAGE,
            "http_requests_total": cluster.REQUESTS_PER_POD,
        }
        prom = PrometheusSandbox(scrape_targets=[ScrapeTarget(exporter.address)], scrape_interval=1.0)
        try:
            prom.backfill(history(plan, exporter.address, origin, rates, 150))
            await prom.astart()
            await asyncio.to_thread(prom.wait_for, 'up{job="sandbox"} == 1', bool, 20)
            async with aiohttp.ClientSession() as session:
                for w in plan:
                    adapter_cpu, adapter_memory, adapter_requests = peers.adapter_queries(w)
                    keda_cpu, keda_requests = peers.keda_queries(w)
                    for query, per_pod in (
                        (adapter_cpu, cluster.CPU_USAGE),
                        (adapter_requests, rates["http_requests_total"]),
                    ):
                        found = {r["metric"]["pod"]: float(r["value"][1]) for r in await instant(session, prom, query)}
                        assert found == {pod: pytest.approx(per_pod, rel=1e-3) for pod in w.pods}, query
                    # The bench serves no memory series: the adapter's memory query costs its index lookup only.
                    assert await instant(session, prom, adapter_memory) == []
                    for query, per_pod in (
                        (keda_cpu, cluster.CPU_USAGE),
                        (keda_requests, rates["http_requests_total"]),
                    ):
                        [only] = await instant(session, prom, query)
                        assert float(only["value"][1]) == pytest.approx(per_pod * len(w.pods), rel=1e-3), query

                result = await peers.peer_cost(prom, session, plan, period=2.0, periods=1)
        finally:
            await prom.astop()
            prom.close()
    assert set(result) >= {"baseline", "patterns", "queries_per_period"}
    assert result["queries_per_period"] == {"adapter": 9, "keda": 6}
    assert result["baseline"]["queries"] == 0  # nothing else asked Prometheus meanwhile
    for pattern, planned in result["queries_per_period"].items():
        entry = result["patterns"][pattern]
        assert entry["planned"] == entry["answered"] == planned and entry["failed"] == 0, entry
        assert entry["queries"] == planned  # Prometheus' own counter: every query reached it, straight
        assert entry["kept_up"] and entry["late"] == 0
        assert entry["engine_s"] > 0 and entry["prometheus_cpu_s"] >= 0
    assert result["patterns"]["keda"]["series_per_query"] == 1
    assert result["patterns"]["adapter"]["series_per_query"] == pytest.approx(8 / 3)  # 4 pods, 0 (memory), 4
    assert any(line.startswith("| KEDA") for line in peers.peers_report(result, None))


async def instant(session: aiohttp.ClientSession, prom: PrometheusSandbox, query: str) -> list[dict[str, object]]:
    async with session.get(prom.url + "/api/v1/query", params={"query": query}) as response:
        document = await response.json()
    assert document["status"] == "success", document
    result: list[dict[str, object]] = document["data"]["result"]
    return result


async def test_a_querier_that_falls_behind_says_so_and_never_reports_a_smaller_load(peers: ModuleType) -> None:
    """A Prometheus slower than the pattern's load (here a server answering in 0.2 s, one query in flight, 6 a
    0.3 s period): the queries sent after their period are counted, and once the querier is 2 windows behind
    it stops, the rest counted unsent; nothing is dropped from the planned count."""

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(0.2)
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": []}})

    app = web.Application()
    app.router.add_get("/api/v1/query", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        async with aiohttp.ClientSession() as session:
            tally = await peers.issue_queries(session, base, "keda", ["up"] * 6, 0.3, 2, 1, 5.0, 2.0)
    finally:
        await runner.cleanup()
    figures = tally.figures()
    assert figures["planned"] == 12 and figures["failed"] == 0
    assert figures["unsent"] > 0 and figures["sent_after_period"] > 0 and not figures["kept_up"]
    assert figures["answered"] + figures["unsent"] == 12
    assert figures["late"] > 0  # answered more than a period after they were due
