"""Prometheus' side, beside the peers' pattern (issue 41, item 1): what the per-target pattern of an HPA with
prometheus-adapter, and of KEDA, costs the same Prometheus over the same data and period.

The coordinator runs :func:`peer_cost` after the services have stopped (Prometheus and the exporter still
running): a baseline window with no queries at all (Prometheus' own CPU with only its scrapes), then one window
per pattern issuing :func:`peer_queries` every period, spread evenly over it (the HPA controller and KEDA spread
their targets over the period: never a burst), at most ``concurrency`` in flight, straight to Prometheus'
``GET /api/v1/query`` as the peers send it. The service's own reads are the steady window's
(:func:`service_reads`); :func:`ratio` states them as a fraction of a pattern's, the goal being ≤ 1/10.

The queries, as upstream renders them (checked against kubernetes-sigs/prometheus-adapter at 01919d0, and
kedacore/keda at 8b4f083):

* **adapter**: the HPA controller asks the metrics APIs once per HPA per metric per 15 s sync.
  - ``Resource cpu`` (metrics.k8s.io PodMetrics for the target's pods): the adapter's resource provider
    (pkg/resourceprovider/provider.go, ``queryBoth``) runs its cpu *and* its memory containerQuery for every
    such request, grouped by the pod label plus ``containerLabel`` (``GroupBy`` = ``pod,container``). The rule
    is upstream's deploy/manifests/config-map.yaml (kube-prometheus' ``irate(...[4m])``); the Helm chart
    (prometheus-community/helm-charts charts/prometheus-adapter/values.yaml) ships no resource rule enabled,
    only a commented ``rate(...[3m])`` example. The bench's exporter serves no
    ``container_memory_working_set_bytes``: the memory query finds no series and costs an index lookup only,
    less than in a cluster (the pattern's figure is a floor).
  - the ``Pods`` metric (custom.metrics.k8s.io ``pods/*/http_requests`` for the target's pods): the
    rule of docs/config-walkthrough.md, ``sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)``
    (the chart's default rule for ``*_total`` series reads ``[5m]``: more samples, a dearer query; the
    walkthrough's ``[2m]`` reads what the service's Pods query reads).
  - ``LabelMatchers`` as pkg/naming/metrics_query.go ``Build`` renders them: the namespace, then the pods
    (``pod=~"a|b|…"``, joined unescaped; ``pod="a"`` for a single pod). Sent as pkg/client/api.go
    ``Query`` does with the default ``--prometheus-verb=GET``: ``query`` and ``time`` (Unix seconds, 3 decimals).
* **keda**: a ScaledObject with one prometheus trigger per metric, each trigger's query an instant query every
  pollingInterval (here the period): pkg/scalers/prometheus_scaler.go ``ExecutePromQuery``, a GET of
  ``/api/v1/query?query=…&time=<RFC 3339, UTC, whole seconds>``. The queries sum over the Deployment's pods by a
  name regex (``pod=~"<deployment>-.*"``). Without ``useCachedMetrics`` the HPA's own reads of KEDA's metrics
  server query once more per sync: one query per trigger per period is KEDA's floor.

Engine time: the ``prometheus_engine_query_duration_seconds`` summary's ``prepare_time`` (selecting the series:
the index lookups and the chunks), ``inner_eval`` (evaluating) and ``result_sort`` slices, summed: the work the
engine does for the queries. ``queue_time`` is reported apart: it is mostly waiting for one of
``--query.max-concurrency`` (20) slots, a figure of the querier's concurrency rather than of the work. All are
wall time: on a loaded machine they exceed the CPU they stand for; the process CPU above the baseline is the
cost, the engine time says how much of it the engine spends (the rest: HTTP, JSON encoding, Go's GC).
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.parse
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import orjson
from yarl import URL

from autoscaler_sandbox import PrometheusSandbox
from servicebench.cluster import Workload
from servicebench.procfs import cpu_seconds
from servicebench.samples import Samples, parse_metrics, total
from servicebench.window import Snapshot

PATTERNS = ("adapter", "keda")
TITLES = {"adapter": "HPA + prometheus-adapter", "keda": "KEDA (prometheus triggers)"}
ENGINE = "prometheus_engine_query_duration_seconds_sum"
ENGINE_SLICES = ("prepare_time", "inner_eval", "result_sort")  # the engine's work; queue_time apart (see above)
GOAL = 0.1  # the service's reads cost at most a tenth of the per-target pattern's
T = TypeVar("T")


def _pods(pods: Sequence[str]) -> str:
    """The adapter's pod matcher: ``pod="a"`` for one name, ``pod=~"a|b"`` for several (unescaped)."""
    return f'pod="{pods[0]}"' if len(pods) == 1 else f'pod=~"{"|".join(pods)}"'


def adapter_queries(w: Workload) -> list[str]:
    """One HPA sync's PromQL through prometheus-adapter: Resource cpu (the cpu and memory containerQuery of one
    PodMetrics request), then the Pods metric."""
    matchers = f'namespace="{w.namespace}",{_pods(w.pods)}'
    return [
        f'sum by (pod,container) (irate (container_cpu_usage_seconds_total{{{matchers},container!="",pod!=""}}[4m]))',
        f'sum by (pod,container) (container_memory_working_set_bytes{{{matchers},container!="",pod!=""}})',
        f"sum(rate(http_requests_total{{{matchers}}}[2m])) by (pod)",
    ]


def keda_queries(w: Workload) -> list[str]:
    """One polling interval's PromQL of a ScaledObject with a prometheus trigger per metric."""
    matchers = f'namespace="{w.namespace}",pod=~"{w.name}-.*"'
    return [
        f'sum(rate(container_cpu_usage_seconds_total{{{matchers},container!=""}}[2m]))',
        f"sum(rate(http_requests_total{{{matchers}}}[2m]))",
    ]


def peer_queries(plan: list[Workload], pattern: str) -> list[str]:
    """The queries one sync period costs Prometheus under ``pattern``, target by target (a target's metrics
    asked back to back, as one HPA sync or one ScaledObject poll asks them)."""
    render = {"adapter": adapter_queries, "keda": keda_queries}.get(pattern)
    if render is None:
        raise ValueError(f"unknown pattern {pattern!r}: one of {', '.join(PATTERNS)}")
    return [query for w in plan for query in render(w)]


def _time_parameter(pattern: str, now: float) -> str:
    """The ``time`` each peer sends: the adapter's model.Time (Unix seconds, 3 decimals), KEDA's RFC 3339."""
    if pattern == "keda":
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
    return f"{now:.3f}"


def engine_seconds(before: Samples, after: Samples) -> float:
    """The engine's work between two scrapes of Prometheus' /metrics (the ENGINE_SLICES' sums)."""
    return sum(total(after, ENGINE, slice=s) - total(before, ENGINE, slice=s) for s in ENGINE_SLICES)


def queue_seconds(before: Samples, after: Samples) -> float:
    return total(after, ENGINE, slice="queue_time") - total(before, ENGINE, slice="queue_time")


def server_queries(before: Samples, after: Samples) -> float:
    """Instant queries Prometheus answered between two scrapes (its own counter)."""
    name, handler = "prometheus_http_requests_total", "/api/v1/query"
    return total(after, name, handler=handler) - total(before, name, handler=handler)


def reads_figures(
    seconds: float, period: float, periods: float, prometheus_cpu: float, engine: float, queries: float
) -> dict[str, float]:
    """A window's figures, the same for the baseline, a pattern and the service's steady window. ``periods``:
    the periods' worth of queries the window answered (a pattern's queries may be answered past its last period:
    its window lasts until the last answer, and its cost per period is still the whole work over ``periods``)."""
    return {
        "seconds": seconds,
        "periods": periods,
        "prometheus_cpu_s": prometheus_cpu,
        "cpu_per_period_s": prometheus_cpu / seconds * period if seconds else 0.0,
        "engine_s": engine,
        "engine_per_period_s": engine / periods if periods else 0.0,
        "queries": queries,
        "queries_per_period": queries / periods if periods else 0.0,
    }


def service_reads(first: Snapshot, last: Snapshot, period: float) -> dict[str, float]:
    """The service's reads over the steady window (its two snapshots; with shards, any one service's pair:
    Prometheus' figures cover every service's reads over the window)."""
    seconds = last.at - first.at
    return reads_figures(
        seconds,
        period,
        seconds / period,
        last.prometheus_cpu - first.prometheus_cpu,
        engine_seconds(first.prometheus_metrics, last.prometheus_metrics),
        server_queries(first.prometheus_metrics, last.prometheus_metrics),
    )


def above_baseline(window: dict[str, Any], baseline: dict[str, Any]) -> tuple[float, float]:
    """Prometheus' CPU and engine time per period of ``window``'s queries, the baseline's rate taken off."""
    cpu_rate = baseline["prometheus_cpu_s"] / baseline["seconds"]
    engine_rate = baseline["engine_s"] / baseline["seconds"]
    periods = window["periods"]
    return (
        (window["prometheus_cpu_s"] - cpu_rate * window["seconds"]) / periods,
        (window["engine_s"] - engine_rate * window["seconds"]) / periods,
    )


def whole_load(pattern: dict[str, Any], baseline: dict[str, Any]) -> tuple[float, float]:
    """Prometheus' CPU and engine time above the baseline that one period of ``pattern``'s whole load costs: per
    query answered, times the queries a period plans. The same as the measured figure per period when every
    query was answered in its period; where the querier could not deliver the load (at 10,000 targets the
    adapter's is 2,000 queries a second) it is what the answered queries cost each, times the load: the window's
    own per-period figure would state the smaller load delivered as the pattern's cost."""
    answered = pattern.get("answered") or 0
    if not answered:
        return above_baseline(pattern, baseline)
    cpu, engine = above_baseline(pattern, baseline)
    per_period = pattern["planned"] / pattern["periods"]
    return cpu * pattern["periods"] / answered * per_period, engine * pattern["periods"] / answered * per_period


def ratio(service: dict[str, Any], pattern: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """The service's read cost as a fraction of ``pattern``'s whole load (:func:`whole_load`), from Prometheus'
    CPU above the baseline (the goal's measure: what the operator pays) and from the engine's time (wall time:
    under a saturated CPU it counts the waiting too, so it is shown, not judged). A service figure under the
    baseline (noise) counts as 0. ``complete`` says whether every query of the pattern was answered (else its
    cost is the answered queries' each, times the load) and ``kept_up`` whether the querier delivered the load
    within its periods."""
    service_cpu, service_engine = above_baseline(service, baseline)
    pattern_cpu, pattern_engine = whole_load(pattern, baseline)
    cpu = max(service_cpu, 0.0) / pattern_cpu if pattern_cpu > 0 else None
    engine = max(service_engine, 0.0) / pattern_engine if pattern_engine > 0 else None
    return {
        "cpu": cpu,
        "engine": engine,
        "service_cpu_per_period_s": service_cpu,
        "pattern_cpu_per_period_s": pattern_cpu,
        "service_engine_per_period_s": service_engine,
        "pattern_engine_per_period_s": pattern_engine,
        "goal": GOAL,
        "met": cpu is not None and cpu <= GOAL,
        "complete": pattern.get("answered") == pattern.get("planned"),
        "kept_up": bool(pattern.get("kept_up", True)),
    }


@dataclass
class _Tally:
    """What one pattern's querier saw."""

    planned: int = 0
    answered: int = 0
    failed: int = 0
    late: int = 0  # answered more than a period after it was due: the target's next query was due first
    sent_after_period: int = 0  # sent after its period had ended: the querier (or Prometheus) fell behind
    unsent: int = 0  # never sent: the querier gave up, too far behind (see issue_queries)
    series: int = 0
    latencies: list[float] = field(default_factory=list)  # sent → answered, seconds
    errors: Counter[str] = field(default_factory=Counter)

    def figures(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def quantile(q: float) -> float | None:
            return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None

        return {
            "planned": self.planned,
            "answered": self.answered,
            "failed": self.failed,
            "late": self.late,
            "sent_after_period": self.sent_after_period,
            "unsent": self.unsent,
            "kept_up": self.sent_after_period == 0 and self.unsent == 0,
            "series_per_query": self.series / self.answered if self.answered else 0.0,
            "latency_p50_s": quantile(0.5),
            "latency_p99_s": quantile(0.99),
            "latency_max_s": ordered[-1] if ordered else None,
            "errors": dict(self.errors.most_common(5)),
        }


async def _ask(
    session: aiohttp.ClientSession,
    url: str,
    due: float,
    period: float,
    limit: aiohttp.ClientTimeout,
    tally: _Tally,
    slots: asyncio.Semaphore,
) -> None:
    sent = time.monotonic()
    try:
        async with session.get(URL(url, encoded=True), timeout=limit) as response:
            body = await response.read()
            status = response.status
        answered = time.monotonic()
        document = orjson.loads(body) if status == 200 else {}
        if document.get("status") != "success":
            tally.failed += 1
            tally.errors[f"HTTP {status} {document.get('errorType', '')}".strip()] += 1
            return
        tally.answered += 1
        tally.series += len(document["data"]["result"])
        tally.latencies.append(answered - sent)
        if answered - due > period:
            tally.late += 1
    except (aiohttp.ClientError, TimeoutError, OSError, orjson.JSONDecodeError) as error:
        tally.failed += 1
        tally.errors[type(error).__name__] += 1
    finally:
        slots.release()


async def issue_queries(
    session: aiohttp.ClientSession,
    base: str,
    pattern: str,
    queries: list[str],
    period: float,
    periods: int,
    concurrency: int,
    query_timeout: float,
    give_up_after: float,
) -> _Tally:
    """``periods`` periods of ``queries``, each period's spread evenly over it, at most ``concurrency`` in
    flight: a query waits for a free slot (the querier then falls behind, counted, never skipped). A querier
    that cannot deliver the load (Prometheus and it sharing too few CPUs: at 10,000 targets the adapter's
    pattern asks 2,000 queries a second) stops sending ``give_up_after`` times the window's length after its
    start, and counts the rest unsent, rather than run for half an hour."""
    prefixes = [f"{base}/api/v1/query?query={urllib.parse.quote_plus(q)}&time=" for q in queries]
    tally = _Tally(planned=len(prefixes) * periods)
    slots = asyncio.Semaphore(concurrency)
    limit = aiohttp.ClientTimeout(total=query_timeout)
    tasks: set[asyncio.Task[None]] = set()
    step = period / max(len(prefixes), 1)
    start = time.monotonic()
    stop = start + give_up_after * periods * period
    for sent in range(tally.planned):
        index, position = divmod(sent, len(prefixes))
        due = start + index * period + position * step
        if (wait := due - time.monotonic()) > 0:
            await asyncio.sleep(wait)
        await slots.acquire()
        now = time.monotonic()
        if now >= stop:
            slots.release()
            tally.unsent = tally.planned - sent
            break
        if now >= start + (index + 1) * period:
            tally.sent_after_period += 1
        url = prefixes[position] + urllib.parse.quote(_time_parameter(pattern, time.time()))
        task = asyncio.create_task(_ask(session, url, due, period, limit, tally, slots))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    return tally


@dataclass
class _Measured:
    seconds: float
    prometheus_cpu: float
    querier_cpu: float  # this process's: the querier's (and the exporter thread's) CPU
    before: Samples
    after: Samples


async def _window(
    prom: PrometheusSandbox, session: aiohttp.ClientSession, work: Callable[[], Awaitable[T]]
) -> tuple[_Measured, T]:
    """Seconds, Prometheus' CPU and this process's (the querier's) over ``work``, and Prometheus' /metrics
    before and after: the scrapes outside the CPU readings, as window.Harness.snapshot keeps them."""
    assert prom.pid is not None

    async def scrape() -> Samples:
        async with session.get(prom.url + "/metrics", timeout=aiohttp.ClientTimeout(total=30)) as response:
            response.raise_for_status()
            return parse_metrics(await response.text())

    before = await scrape()
    started, prom_cpu, own_cpu = time.monotonic(), cpu_seconds(prom.pid), cpu_seconds(os.getpid())
    out = await work()
    seconds = time.monotonic() - started
    prom_spent, own_spent = cpu_seconds(prom.pid) - prom_cpu, cpu_seconds(os.getpid()) - own_cpu
    after = await scrape()
    return _Measured(seconds, prom_spent, own_spent, before, after), out


async def peer_cost(
    prom: PrometheusSandbox,
    session: aiohttp.ClientSession,
    plan: list[Workload],
    period: float,
    periods: int,
    patterns: Sequence[str] = PATTERNS,
    concurrency: int = 16,
    query_timeout: float | None = None,
    give_up_after: float = 3.0,
) -> dict[str, Any]:
    """The baseline window, then one window per pattern (see the module). ``query_timeout``: per query
    (default two periods: a query still unanswered then is failed, its slot freed); ``give_up_after``: a
    querier that has not sent all its queries by that many times the window's length stops (see issue_queries)."""
    per_query = query_timeout if query_timeout is not None else 2 * period
    queries = {pattern: peer_queries(plan, pattern) for pattern in patterns}

    def figures(m: _Measured) -> dict[str, Any]:
        out: dict[str, Any] = reads_figures(
            m.seconds,
            period,
            periods,
            m.prometheus_cpu,
            engine_seconds(m.before, m.after),
            server_queries(m.before, m.after),
        )
        out["queue_s"] = queue_seconds(m.before, m.after)
        out["querier_cpu_s"] = m.querier_cpu
        return out

    async def idle() -> None:
        await asyncio.sleep(periods * period)

    baseline = figures((await _window(prom, session, idle))[0])
    results: dict[str, dict[str, Any]] = {}
    for pattern in patterns:

        async def issue(pattern: str = pattern) -> _Tally:
            return await issue_queries(
                session, prom.url, pattern, queries[pattern], period, periods, concurrency, per_query, give_up_after
            )

        measured, tally = await _window(prom, session, issue)
        entry = figures(measured)
        entry.update(tally.figures())
        entry["cpu_above_baseline_per_period_s"], entry["engine_above_baseline_per_period_s"] = above_baseline(
            entry, baseline
        )
        # Per query answered, and a period's whole load at that cost (what the window's own per-period figure
        # understates when the querier could not deliver the load).
        entry["cpu_above_baseline_per_query_s"] = (
            entry["cpu_above_baseline_per_period_s"] * periods / tally.answered if tally.answered else None
        )
        entry["whole_cpu_per_period_s"], entry["whole_engine_per_period_s"] = whole_load(entry, baseline)
        results[pattern] = entry
    return {
        "baseline": baseline,
        "patterns": results,
        "queries_per_period": {pattern: len(q) for pattern, q in queries.items()},
        "period": period,
        "concurrency": concurrency,
        "timeout_s": per_query,
    }


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.1f}"


def _per_query(seconds: float | None) -> str:
    return "" if seconds is None else f" ({seconds * 1000:.2f} a query)"


def _kept_up(entry: dict[str, Any]) -> str:
    if entry["kept_up"]:
        return "yes"
    unsent = f", {entry['unsent']:,} never sent" if entry.get("unsent") else ""
    return f"no ({entry['sent_after_period']:,} sent after their period{unsent})"


def peers_report(result: dict[str, Any], service_reads: dict[str, Any] | None) -> list[str]:
    """The report's section: every window's Prometheus figures, and the service's reads as a fraction of each
    pattern's against the goal (≤ 1/10)."""
    baseline = result["baseline"]
    period = result["period"]
    lines = [
        f"**Prometheus' side, beside the peers' pattern** (windows of {baseline['periods']:g} periods of "
        f"{period:g} s; the peers' queries straight to Prometheus, spread over each period, at most "
        f"{result['concurrency']} in flight, {result['timeout_s']:g} s timeout; CPU and times in ms)",
        "",
        "| window | queries/period | Prometheus CPU/period | above baseline, a period's whole load "
        "| engine time, a period's whole load | answered/planned | failed | late | latency p50 / p99 | kept up |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| baseline (scrapes only) | {baseline['queries_per_period']:,.0f} | {_ms(baseline['cpu_per_period_s'])} | — "
        f"| {_ms(baseline['engine_per_period_s'])} | — | — | — | — | — |",
    ]
    if service_reads is not None:
        cpu, engine = above_baseline(service_reads, baseline)
        lines.append(
            f"| the service's reads (steady window) | {service_reads['queries_per_period']:,.0f} "
            f"| {_ms(service_reads['cpu_per_period_s'])} | {_ms(cpu)} | {_ms(engine)} | — | — | — | — | — |"
        )
    for pattern, entry in result["patterns"].items():
        whole = whole_load(entry, baseline)
        each = _per_query(entry.get("cpu_above_baseline_per_query_s"))
        lines.append(
            f"| {TITLES.get(pattern, pattern)} | {result['queries_per_period'][pattern]:,} "
            f"| {_ms(entry['cpu_per_period_s'])} | {_ms(whole[0])}{each} "
            f"| {_ms(whole[1])} | {entry['answered']:,}/{entry['planned']:,} "
            f"| {entry['failed']:,} | {entry['late']:,} | {_ms(entry['latency_p50_s'])} / "
            f"{_ms(entry['latency_p99_s'])} | {_kept_up(entry)} |"
        )
    querier = ", ".join(
        f"{pattern} {_ms(entry['querier_cpu_s'] / entry['seconds'] * period)}"
        for pattern, entry in result["patterns"].items()
        if "querier_cpu_s" in entry
    )
    lines += ["", f"the querier's own CPU per period (the harness, on Prometheus' CPUs): {querier or '—'}"]
    if service_reads is None:
        lines.append("the service's reads: not measured in this run (no steady window): no ratio")
        return lines
    for pattern, entry in result["patterns"].items():
        r = ratio(service_reads, entry, baseline)
        shown = " and ".join(
            f"{name} {'—' if value is None else f'{value:.3f} (1/{1 / value:,.0f})' if value else '0'}"
            for name, value in (
                ("Prometheus CPU above baseline", r["cpu"]),
                ("engine time (shown, not judged)", r["engine"]),
            )
        )
        verdict = "met" if r["met"] else "MISSED"
        if not r["complete"]:
            verdict += (
                f" (the querier delivered {entry['answered']:,} of the pattern's {entry['planned']:,} queries: its "
                "whole load's cost is theirs each, times the load)"
            )
        elif not r["kept_up"]:
            verdict += " (the querier fell behind: some queries were answered after their period)"
        lines.append(
            f"the service's reads / {TITLES.get(pattern, pattern)}'s: {shown}; goal ≤ 1/{1 / GOAL:g}: {verdict}"
        )
    return lines
