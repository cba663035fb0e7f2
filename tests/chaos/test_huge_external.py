"""F56 (issue 37, item 9): a huge External metric answer, every sync, without stalling the event loop.

An External metric's query answers 200,000 series (27 MB) every sync, each worth 1 milli: the decode was
sliced already, but reading the value sorted and converted every series in one step (3 s; ``/healthz`` took
2.7 s). Expected: every per-series step of the answer takes its turn on the loop, the service's own
loop-lag histogram (``autoscaler_event_loop_lag_seconds``, a timer every 0.5 s) keeps its p99 under
``LAG_BOUND`` while the answer keeps arriving, and the value read is the exact sum (200 = 4 pods of 50).
"""

from __future__ import annotations

import asyncio
import time

import orjson

from autoscaler.service.telemetry.metrics import LAG_BUCKETS
from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import queue_metric, replicas_of, status_of, target
from tests.service.cluster import deployment

SERIES = 200_000
MEASURED = 55.0  # seconds of loop-lag samples: ~110 of them, so that one late timer is not yet the p99
# The bound the p99 is held to. Before the fix every answer stalled the loop ~3 s, so the p99 was seconds; on an
# idle machine it is now a few milliseconds. 0.5 s tells the two apart on a machine busy with the rest of the
# suite too (the 100 ms goal is a speed goal: bench/, BENCHMARKS.md; why it holds: docs/benchmarks-history.md,
# "Where the loop stalls").
LAG_BOUND = 0.5


def huge_external_answer(series: int) -> bytes:
    """``series`` series of 8 labels (~27 MB at 200,000), each worth 0.001, in no particular order."""
    now = time.time()
    result = [
        {
            "metric": {
                "__name__": "huge_queue_depth",
                "queue": f"q-{(i * 7919) % series}",  # not in label order: the reading sorts them
                **{f"label_{k}": f"value-{k}-{i % 97}" for k in range(6)},
            },
            "value": [now, "0.001"],
        }
        for i in range(series)
    ]
    return orjson.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})


Buckets = dict[float, float]  # the histogram's cumulative counts by upper bound (+Inf as inf)


async def lag_buckets(service: ServiceProcess) -> Buckets:
    samples = await service.metrics()
    return {
        float(labels[0][1]): value
        for (name, labels), value in samples.items()
        if name == "autoscaler_event_loop_lag_seconds_bucket"
    }


def quantile(q: float, before: Buckets, after: Buckets) -> tuple[float, float]:
    """(the q-quantile of the samples between two snapshots, as histogram_quantile interpolates it within its
    bucket; how many samples there were)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    total = counts[-1]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= rank:
            if bound == float("inf"):
                return lower, total
            return lower + (bound - lower) * ((rank - below) / max(count - below, 1e-9)), total
        lower, below = bound, count
    return lower, total


async def test_i37_9_a_huge_external_answer_every_sync_keeps_the_loop_lag_p99_low(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: each 200,000-series answer was read into its value in one step of ~3 s on the loop,
    and every loop-lag sample while it arrived was that late (p99 of seconds)."""
    assert LAG_BOUND in LAG_BUCKETS  # the p99 is read at a bucket's bound
    body = await asyncio.to_thread(huge_external_answer, SERIES)  # made off this loop (the emulator runs on it)
    assert len(body) > 25_000_000
    rule = proxy.add(Rule("huge_queue_depth", body=body))
    cluster.create(deployment("big", 2))
    metric = queue_metric("huge_queue_depth", per_pod="50", name="huge_queue_depth")
    cluster.create(target("big", metrics=[metric]))
    service = await chaos.service("one", sync={"periodSeconds": 2})
    # 200,000 × 1 milli = 200: 4 pods of 50. Exact, from series in no particular order.
    await wait_until(lambda: replicas_of(cluster, "big") == 4, 90, "the scale-up to 4 on the huge answer's sum")
    assert scaling_active(cluster, "big")["reason"] == "ValidMetricFound"
    await asyncio.sleep(3.0)  # past the start-up's full collections (see loop/collector.py)
    hits, before = rule.hits, await lag_buckets(service)
    await asyncio.sleep(MEASURED)
    after = await lag_buckets(service)
    arrived = rule.hits - hits
    p99, samples = quantile(0.99, before, after)
    inf = float("inf")
    late = (after[inf] - after[LAG_BOUND]) - (before.get(inf, 0.0) - before.get(LAG_BOUND, 0.0))
    over = f"{late:.0f} of {samples:.0f} samples over {LAG_BOUND * 1000:.0f} ms"
    print(f"loop lag p99 {p99 * 1000:.0f} ms, {over}, {arrived} answers")
    assert p99 < LAG_BOUND, f"loop lag p99 {p99 * 1000:.0f} ms ({over})"
    assert samples >= 90, f"only {samples:.0f} loop-lag samples in {MEASURED:g}s"
    assert arrived >= MEASURED / 2 / 4, f"the huge answer arrived {arrived} times in {MEASURED:g}s (period 2 s)"
    assert replicas_of(cluster, "big") == 4
    [current] = status_of(cluster, "big")["currentMetrics"]
    assert current["external"]["current"]["averageValue"] == "50", current
