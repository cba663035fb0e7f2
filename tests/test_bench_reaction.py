"""The benchmark's reaction time (bench/servicebench/reaction.py): a step of load at a known instant, each counter
continuous, timed from the first scrape carrying it to each sampled target's scale write. Its arithmetic (what the
first scrape lifts ``rate()`` to, the proposal it asks, percentiles and histogram, the sample's spread), its reader
of scale writes, and one small run against a real ``autoscaler run``, Prometheus and the API emulator."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest

from autoscaler.values.timestamps import rfc3339
from autoscaler_sandbox.exporter import MetricsExporter
from kube_emulator import KubeEmulator
from kube_emulator.requestinfo import RequestInfo
from tests.bench_modules import servicebench
from tests.guard import REQUIRE_SERVERS
from tests.warm_prometheus import Scraped


@pytest.fixture(scope="module")
def reaction() -> Iterator[ModuleType]:
    with servicebench("reaction") as module:
        yield module


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def samples_of(exporter: MetricsExporter, clock: Clock, pod: str, until: float) -> list[tuple[float, float]]:
    """(timestamp, value) of ``pod``'s counter at one render a second until ``until``: what a 1 s scrape stores."""
    out = []
    while clock.now <= until:
        text = exporter.render()
        match = re.search(rf'http_requests_total{{namespace="ns",pod="{pod}"}} (\S+) (\d+)', text)
        assert match is not None
        out.append((int(match[2]) / 1000, float(match[1])))
        clock.now += 1.0
    return out


def prometheus_rate(samples: list[tuple[float, float]], at: float, window: float) -> float:
    """rate(x[window]) at ``at`` for a counter that never resets, its samples a steady interval apart and the
    window's ends within one (extrapolated to both ends): the mean slope over the samples in (at - window, at]."""
    inside = [(t, v) for t, v in samples if at - window < t <= at]
    (t0, v0), (t1, v1) = inside[0], inside[-1]
    return (v1 - v0) / (t1 - t0)


def test_a_continuous_step_lifts_rate_by_the_time_it_has_run_and_the_first_scrape_proposes_as_said(
    reaction: ModuleType,
) -> None:
    exporter = MetricsExporter()
    clock = Clock(1_000_000.0)
    exporter._clock = clock
    for pod in ("a", "b"):
        exporter.set_rate("http_requests_total", {"namespace": "ns", "pod": pod}, 10.0, origin=clock.now - 3600)
    before = samples_of(exporter, clock, "a", 1_000_200.0)
    clock.now = before[-1][0] + 0.05  # right after a scrape, as the phase steps
    step = exporter.change_rates("http_requests_total", [{"namespace": "ns", "pod": "a"}], 20.0)
    clock.now = before[-1][0] + 1.0  # the next scrape, a second after the last
    after = samples_of(exporter, clock, "a", step + 30.0)
    samples = before + after
    assert all(later[1] > earlier[1] for earlier, later in itertools.pairwise(samples))  # a counter: never back
    first = after[0][0]
    assert prometheus_rate(samples, before[-1][0], 120.0) == pytest.approx(10.0)
    # The first scrape carries 0.95 s of the doubled rate: through a 2 m window, a lift of 0.95/119, no burst.
    carried = first - step
    assert prometheus_rate(samples, first, 120.0) == pytest.approx(10.0 * (1 + carried / 119.0))
    assert reaction.step_ratio(2.0, carried) <= prometheus_rate(samples, first, 120.0) / 10.0  # the least lift
    # A 15 s scrape's first sample carries ~15 s: ×2 is past the 10 % tolerance, 12 replicas of 10.
    later = first + 14.0
    assert prometheus_rate(samples, later, 120.0) / 10.0 >= reaction.step_ratio(2.0, later - step) > 1.1
    assert reaction.proposal(10, reaction.step_ratio(2.0, 15.0), 30) == 12
    # A 1 s scrape needs a step of ×13 for its first sample to be past the tolerance.
    assert reaction.least_factor(1.0) == pytest.approx(13.0)
    assert reaction.step_ratio(reaction.least_factor(1.0), 1.0) == pytest.approx(1.1)
    assert reaction.least_factor(15.0) == pytest.approx(1.8)
    assert reaction.proposal(10, 1.05, 30) == 10  # inside the tolerance: the current count
    assert reaction.proposal(10, 5.0, 30) == 30  # maxReplicas
    assert reaction.proposal(10, 1.2, 30) == 12  # exactly 12.0, not 13 by a rounding error


def test_percentiles_are_nearest_rank_and_the_histogram_keeps_every_bucket(reaction: ModuleType) -> None:
    values = [float(v) for v in range(1, 101)]
    assert [reaction.percentile(values, q) for q in (0.5, 0.9, 0.99, 1.0)] == [50.0, 90.0, 99.0, 100.0]
    assert reaction.percentile([3.0], 0.99) == 3.0
    assert reaction.percentile([], 0.5) is None
    buckets = reaction.histogram([0.0, 0.99, 1.0, 5.5, 6.0, 7.0], 1.0, 6.0)
    assert [(b["from"], b["to"], b["count"]) for b in buckets] == [
        (0.0, 1.0, 2),
        (1.0, 2.0, 1),
        (2.0, 3.0, 0),
        (3.0, 4.0, 0),
        (4.0, 5.0, 0),
        (5.0, 6.0, 1),
        (6.0, None, 2),
    ]
    assert reaction.histogram([-0.5], 1.0, 2.0)[0] == {"from": None, "to": 0.0, "count": 1}


def test_the_sample_spreads_over_every_namespace(reaction: ModuleType) -> None:
    with servicebench("cluster") as cluster:
        plan = cluster.layout(10_000, 1, 50)
    # Every 200th target of the layout (round robin over 50 namespaces) would all be of one namespace.
    assert len({w.namespace for w in plan[::200]}) == 1
    one_each = reaction.choose(plan, 50)
    assert sorted(w.namespace for w in one_each) == sorted({w.namespace for w in plan})
    two_each = reaction.choose(plan, 100)
    assert len(set(two_each)) == 100 and set(Counter(w.namespace for w in two_each).values()) == {2}
    assert len({w.namespace for w in reaction.choose(plan, 7)}) == 7
    assert reaction.choose(plan[:3], 5) == sorted(plan[:3], key=lambda w: w.namespace)


def scale_patch(namespace: str, name: str) -> RequestInfo:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"
    return RequestInfo("PATCH", path, True, "patch", "apps", "v1", namespace, "deployments", name, subresource="scale")


def test_scale_writes_are_read_from_the_reader_on_and_only_once_answered(reaction: ModuleType) -> None:
    emu = KubeEmulator()
    emu.requests.start(scale_patch("ns", "before"), "").finish(200)
    reader = reaction.ScaleWrites(emu)
    in_flight = emu.requests.start(scale_patch("ns", "b"), "")
    emu.requests.start(scale_patch("ns", "refused"), "").finish(409)
    emu.requests.start(RequestInfo("GET", "/api/v1/pods", True, "list", resource="pods"), "").finish(200)
    assert reader.update() == []
    in_flight.finish(200)
    assert [key for key, _ in reader.update()] == ["ns/b"]
    assert reader.update() == []


# -- one small run: the real service, Prometheus scraping every second, the emulator ---------------------------

PERIOD = 3.0
SCRAPE = 1.0
WINDOW = 10.0  # the test's rate() window: 2 m of history would take longer to gather than the whole test
FACTOR = 4.0  # one 1 s scrape of ×4 lifts rate(x[10s]) by ≥ 30 %: past the tolerance at once


def short_window_target(cluster: ModuleType, w: Any) -> dict[str, Any]:
    """The benchmark's ScalingTarget with its Pods metric alone, over a 10 s window."""
    target: dict[str, Any] = cluster.scaling_target(w)
    target["spec"]["metrics"] = [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "http_requests_per_second"},
                "target": {"type": "AverageValue", "averageValue": "10"},
                "query": f"sum by (namespace, pod) (rate(http_requests_total{{<<scope>>}}[{WINDOW:g}s]))",
            },
        }
    ]
    return target


def steady(emu: KubeEmulator, targets: str, plan: list[Any]) -> bool:
    for w in plan:
        status = (emu.get(targets, w.name, w.namespace) or {}).get("status") or {}
        if (status.get("lastDecision") or {}).get("proposal") != len(w.pods):
            return False
    return True


@pytest.mark.prometheus
async def test_a_small_run_writes_every_sampled_target_within_a_period_of_the_first_scrape(
    reaction: ModuleType, scraped: Scraped, tmp_path: Path
) -> None:
    if scraped.prometheus is None:
        if REQUIRE_SERVERS:
            pytest.fail("prometheus is not installed (Debian package 'prometheus')")
        pytest.skip("prometheus is not installed (Debian package 'prometheus')")
    with servicebench("cluster") as cluster, servicebench("window") as window, servicebench("process") as process:
        plan = cluster.layout(4, 10, 4)
        exporter = scraped.exporter
        origin = time.time() - 3600
        for w in plan:
            for pod in w.pods:
                labels = {"namespace": w.namespace, "pod": pod}
                exporter.set_rate("http_requests_total", labels, cluster.REQUESTS_PER_POD, origin=origin)
        args = argparse.Namespace(
            period=PERIOD,
            scrape_interval=SCRAPE,
            set=[],
            no_leader_election=True,
            log_level="info",
            profile=False,
            launcher=None,
            service_cpus=None,
        )
        async with KubeEmulator() as emu, aiohttp.ClientSession() as session:
            emu.install_crd(cluster.CRD)
            started = rfc3339(time.time() - 3600)
            for index, w in enumerate(plan):
                emu.seed(cluster.deployment(w, started))
                emu.seed(*(cluster.pod(w, name, 10 * index + p, started) for p, name in enumerate(w.pods)))
                emu.seed(short_window_target(cluster, w))
            h = window.Harness(args, emu, scraped.prometheus, session, tmp_path)
            service = h.launch("service", emu.write_kubeconfig(tmp_path / "kubeconfig"))
            try:
                await h.wait_ready(service, 60)
                # Steady: every series' window full of the steady rate, then a sync of every target since (each
                # proposing its own count), nothing written.
                query = f"count((rate(http_requests_total[{WINDOW:g}s]) > 9.9) < 10.1)"
                await asyncio.to_thread(
                    scraped.prometheus.wait_for, query, lambda r: bool(r) and r[0]["value"][1] == "40", 30
                )
                await asyncio.sleep(PERIOD * 1.2 + 1.5)  # a tick (jittered ±10 %), its batch window and writes
                assert steady(emu, cluster.TARGETS, plan), service.log.read_text()[-3000:]
                assert emu.requests.count("patch", "deployments/scale") == 0
                result = await reaction.reaction(h, exporter, plan, 2, FACTOR, window=WINDOW)
            finally:
                await process.stop_all([service])
            sampled = result["sampled"]
            assert result["sample"] == 2 and len({key.split("/")[0] for key in sampled}) == 2
            assert result["missed"] == [] and result["other_writes"] == {}
            # What the first scrape carried (and with it the least proposal) depends on how soon after a scrape the
            # step landed, later on a loaded machine: the arithmetic is the pure tests'; here, what was written.
            assert 0 < result["first_scrape_carried_s"] <= SCRAPE + 0.5
            assert len(result["reactions_s"]) == 2
            assert result["reactions_s"][0] >= 0 and result["max"] < PERIOD + SCRAPE + 2.0, result
            assert result["after_step_s"][-1] > result["max"]  # the step came first, then its scrape
            assert all(replicas >= result["expected_proposal"] for replicas in result["replicas"])
            for w in plan:
                replicas = int((emu.get("deployments", w.name, w.namespace) or {})["spec"]["replicas"])
                key = f"{w.namespace}/{w.name}"
                assert (replicas > 10) if key in sampled else (replicas == 10), (key, replicas)
            assert sum(b["count"] for b in result["histogram"]) == 2
            report = reaction.reaction_report(result)
            assert any("p99" in line and "goal p99 ≤ 5 s" in line for line in report), report
            assert "| reaction (s) | targets |" in report
            # The load is back at the steady rate, the counter continuous (the sample's pod grows at 10/s again).
            pod = plan[[f"{w.namespace}/{w.name}" for w in plan].index(sampled[0])].pods[0]
            first = exporter.render()
            await asyncio.sleep(0.5)
            second = exporter.render()
            (v0, t0), (v1, t1) = (counter(first, pod), counter(second, pod))
            assert (v1 - v0) / (t1 - t0) == pytest.approx(cluster.REQUESTS_PER_POD, rel=0.05)
            print("\n".join(report))


def counter(text: str, pod: str) -> tuple[float, float]:
    match = re.search(rf'http_requests_total{{namespace="[^"]+",pod="{pod}"}} (\S+) (\d+)', text)
    assert match is not None
    return float(match[1]), int(match[2]) / 1000
