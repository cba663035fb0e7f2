"""Issue 37, item 10: a failure that lasts is written once, not at every sync.

A target whose metric fails the same way sync after sync keeps the same ScalingActive condition, so its
status is written when the failure begins and not again. That held only while the failure's words held:
a message that carried something changing from sync to sync (which of the three waits a timeout ran out
in, a backend's measured deadline, a timestamp, an answer's size) was a new condition, a status write and
a new Event at every sync. Failed before: 4 targets timing out against 2 query slots wrote their statuses
~10 times in 24 s (the message moved between "no free slot…" and "did not answer within 2s"), a
VictoriaMetrics-style 503 naming its deadline and time range once a sync, a too-large answer once a sync.

Now the condition says each failure in words that do not change: every timeout is "did not answer within
Ns" (where the time went is logged), a backend's changing values read as placeholders (``<duration>``,
``<time>``…; the log has its full text), a too-large answer names the limit, not the size.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from typing import Any

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, monotonic, wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import queue_metric, set_load, target
from tests.service.cluster import deployment

WATCHED = 24.0  # seconds the statuses are watched once every failure is written (24 syncs at a 1 s period)


def status_writes(instance: ServiceProcess, name: str, since: float) -> int:
    return len(instance.relay.requests(requests_matching(rf"^PATCH \S*/scalingtargets/{name}/status"), since=since))


def failure_events(cluster: KubeEmulator, name: str, namespace: str) -> list[dict[str, Any]]:
    return [e for e in cluster.events(namespace, involved_name=name) if e.get("type") == "Warning"]


async def targets_failing(
    chaos: Chaos, cluster: KubeEmulator, names: list[str], rule: Rule, **settings: Any
) -> ServiceProcess:
    """Every target (each in a namespace of its name) decided once, then ``rule`` fails its queries;
    returns once every target's status says so (ScalingActive False)."""
    for index, name in enumerate(names):
        cluster.create(deployment(name, 4, namespace=name))
        # A query of its own per target (the same text would be one query shared by all of them).
        query = f'sum(queue_depth{{queue="jobs"}}) + 0 * {index}'
        cluster.create(target(name, metrics=[queue_metric(query, name="queue_depth")], namespace=name))
    instance = await chaos.service("one", **settings)
    for name in names:
        await wait_until(lambda n=name: scaling_active(cluster, n, n).get("status") == "True", 30, f"{name} decided")
    chaos.proxy.add(rule)
    for name in names:
        await wait_until(
            lambda n=name: scaling_active(cluster, n, n).get("reason") == "FailedGetExternalMetric",
            30,
            f"{name}'s ScalingActive False",
        )
    return instance


async def written_once(cluster: KubeEmulator, instance: ServiceProcess, names: list[str]) -> dict[str, str]:
    """Watches the statuses for WATCHED seconds: no target's is written again; returns their messages."""
    since = monotonic()
    messages = {name: scaling_active(cluster, name, name)["message"] for name in names}
    events_before = {name: len(failure_events(cluster, name, name)) for name in names}
    await asyncio.sleep(WATCHED)
    rewrites = {name: status_writes(instance, name, since) for name in names}
    assert all(count <= 1 for count in rewrites.values()), f"status writes in {WATCHED:.0f}s of one failure: {rewrites}"
    for name in names:
        assert scaling_active(cluster, name, name)["message"] == messages[name]
        # The same words each time: the failure's Events are counted up, not made anew (a new message is a new Event).
        assert len(failure_events(cluster, name, name)) == events_before[name], [
            e["message"] for e in failure_events(cluster, name, name)
        ]
    return messages


class TimingOutEitherWay(Rule):
    """Every query times out, one way or the other in turn: Prometheus gives up first (HTTP 503,
    ``errorType: timeout``, as it does when the ``timeout=`` it was sent runs out while it evaluates),
    or our deadline passes first (the answer comes after 5 s). Which one wins is a race on a real server;
    here they alternate."""

    @property  # type: ignore[override]
    def delay(self) -> float:
        return 0.2 if self.hits % 2 else 5.0

    @delay.setter
    def delay(self, value: float) -> None:
        pass

    @property  # type: ignore[override]
    def status(self) -> int | None:
        return 503 if self.hits % 2 else None

    @status.setter
    def status(self, value: int | None) -> None:
        pass


async def test_i37_10_a_timeout_reads_the_same_whoever_gave_up_first(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    await set_load(exporter, prometheus, 40)
    rule = TimingOutEitherWay("queue_depth", error_type="timeout", error="query timed out in query execution")
    instance = await targets_failing(chaos, cluster, ["slow"], rule)
    message = (await written_once(cluster, instance, ["slow"]))["slow"]
    assert message.endswith(f"querying Prometheus failed: Prometheus at {proxy.url} did not answer within 2s"), message
    assert rule.hits >= 8
    # Which side gave up is in the log (once a minute per kind), not in the status.
    await wait_until(
        lambda: any(
            "HTTP 503" in str(line.get("detail", "")) for line in instance.events("Prometheus query timed out")
        ),
        10,
        "the log line naming Prometheus' own timeout",
    )


def vm_deadline_error(form: dict[str, str]) -> str:
    """What a VictoriaMetrics cluster says when a query outlives the ``timeout`` it was sent with: the
    deadline (ours, a little less at every sync), the time it took and the query's time range in
    milliseconds (``lib/searchutils``' Deadline.String)."""
    text = form.get("timeout", "2s")
    sent = float(text[:-2]) / 1000 if text.endswith("ms") else float(text.rstrip("s"))
    end = int(time.time() * 1000) + random.randrange(1000)
    return (
        f'error when executing query="{form.get("query", "")}" on the time range (start={end - 300_000}, '
        f"end={end}, step=15000): cannot fetch query results from vmstorage nodes: timeout exceeded: "
        f"{sent:.3f} seconds (elapsed {sent + random.random() / 100:.3f} seconds); the timeout can be adjusted "
        "with `-search.maxQueryDuration` command-line flag"
    )


async def test_i37_10_a_backend_error_naming_its_deadline_and_time_range(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Every query answered 503 with VictoriaMetrics' deadline error: its numbers change at every sync."""
    await set_load(exporter, prometheus, 40)
    rule = Rule("queue_depth", status=503, error_type="503", error_of=vm_deadline_error)
    instance = await targets_failing(chaos, cluster, ["vm"], rule)
    message = (await written_once(cluster, instance, ["vm"]))["vm"]
    assert "timeout exceeded: <duration> (elapsed <duration>)" in message, message
    assert "(start=<number>, end=<number>, step=15000)" in message, message
    # The full text, numbers and all, is in the log.
    await wait_until(
        lambda: any(
            re.search(r"\(elapsed \d+\.\d{3} seconds\)", str(line.get("detail", "")))
            for line in instance.events("Prometheus query failed")
        ),
        10,
        "the log line with the backend's own numbers",
    )


def larger_each_time(document: dict[str, Any]) -> dict[str, Any]:
    """The answer padded past 4 KiB by a different amount each time (what a growing or churning set of
    series does to an answer's size)."""
    padding = "x" * random.randrange(5000, 9000)
    document.setdefault("data", {}).setdefault("result", []).append({"metric": {"padding": padding}, "value": [0, "0"]})
    return document


async def test_i37_10_a_too_large_answer_names_the_limit_not_the_size(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    await set_load(exporter, prometheus, 40)
    rule = Rule("queue_depth", transform=larger_each_time)
    instance = await targets_failing(chaos, cluster, ["big"], rule, prometheus={"maxResponseBytes": 4096})
    message = (await written_once(cluster, instance, ["big"]))["big"]
    assert "more than prometheus.maxResponseBytes (4096 bytes)" in message, message
