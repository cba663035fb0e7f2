"""A read has one deadline: every query it sends ends by it, the per-pod chunks included (issue 38).

A slow Prometheus on loopback (tests.prometheus.fake_server), a real client and reader: no fault but the
network's. The reader's one sequential path for pod chunks is the one where a fresh deadline per query
showed: a batched chunk whose answer names pods ambiguously (no namespace label, the same pod name in two
namespaces) is asked again one namespace at a time, after that answer came back.
"""

from __future__ import annotations

import asyncio
import re
import time

from aiohttp import web

from autoscaler.core.observation import MetricFailure
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings, TargetQuery
from tests.prometheus import scenario as sc
from tests.prometheus.fake_server import FakePrometheus, Request, json_response

TIMEOUT = 1.0  # prometheus.timeoutSeconds
ANSWER_AFTER = 0.7  # each answer's delay: one fits in the read's deadline, two one after the other do not


def _answer(*series: tuple[str, str]) -> dict[str, object]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": {"pod": pod}, "value": [1000.0, v]} for pod, v in series],
        },
    }


async def _slow_ambiguous(request: Request) -> web.StreamResponse:
    """Every answer late by ANSWER_AFTER; the batched one names web-0 twice without a namespace."""
    await asyncio.sleep(ANSWER_AFTER)
    match = re.search(r'namespace=~?"([^"]*)"', request.form["query"])
    assert match is not None, request.form["query"]
    namespaces = set(match.group(1).split("|"))
    if namespaces == {"a", "b"}:
        return json_response(_answer(("web-0", "1"), ("web-0", "2")))
    return json_response(_answer(("web-0", "7" if namespaces == {"a"} else "8")))


def _target(namespace: str) -> TargetQuery:
    metric = sc.pods_metric("sum by (pod) (m{<<scope>>})")
    return TargetQuery(namespace, f"t{namespace}", sc.ref(f"t{namespace}"), "app=web", ("web-0",), (metric,))


async def test_a_read_whose_pod_chunks_are_asked_again_ends_by_its_one_deadline(fake: FakePrometheus) -> None:
    fake.handler = _slow_ambiguous
    settings = PrometheusSettings(url=fake.url, timeout_seconds=TIMEOUT, retries=0)
    async with PrometheusClient(settings) as client:
        reader = MetricsReader(client, settings)
        started = time.monotonic()
        rows = await reader.read([_target("a"), _target("b")], 1000.0)
        took = time.monotonic() - started
    # The batched query, then one per namespace, sent once the batched answer came back.
    assert len(fake.requests) == 3
    # With a deadline per query, the per-namespace queries had a timeout of their own: the read took two
    # answers' time (1.4 s) and read 7 and 8. With the read's one deadline, they time out with it.
    assert took < TIMEOUT + 0.3, took
    for row in rows:
        assert isinstance(row[0], MetricFailure), row
        assert f"did not answer within {TIMEOUT:g}s" in row[0].message, row[0].message


async def test_a_read_within_its_deadline_reads_the_chunks_asked_again(fake: FakePrometheus) -> None:
    """The same read with time for both answers: the deadline above is what failed it, not the answers."""
    fake.handler = _slow_ambiguous
    settings = PrometheusSettings(url=fake.url, timeout_seconds=3 * ANSWER_AFTER, retries=0)
    async with PrometheusClient(settings) as client:
        rows = await MetricsReader(client, settings).read([_target("a"), _target("b")], 1000.0)
    assert [row[0].pods["web-0"].value for row in rows] == [7000, 8000]  # type: ignore[union-attr]
