"""D4 / F13: clock skew. The service runs with a wall clock off by a minute or minutes (libfaketime; its
monotonic clock stays true, as on a machine whose NTP is off), or stepped while it runs.

Expected: scale-up within the normal time (queries carry no ``time=``: Prometheus answers at its own
"now"), decisions as usual, the skew reported (a warning log line and ``autoscaler_clock_skew_seconds``),
a ScalingActive message that names the clock when data is missing meanwhile, and stabilization windows
that a step of the wall clock neither shortens nor lengthens (decisions run on a clock that never steps).
"""

from __future__ import annotations

import asyncio

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.promproxy import PrometheusProxy, Rule, empty
from tests.chaos.service import ServiceProcess, monotonic, wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import replicas_of, set_load, target
from tests.service.cluster import deployment

# A scale-up from 2 to 8 after the load is in Prometheus: the next sync (1 s period) reads it. The bound
# leaves room for a loaded machine; a query a minute in the past would take a minute.
SCALE_UP_BOUND = 10.0


async def scale_up_seconds(cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox) -> float:
    await set_load(exporter, prometheus, 80)  # returns once Prometheus has it
    return await wait_until(lambda: replicas_of(cluster, "web") == 8, 90, "the scale-up to 8")


async def skewed_service(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, offset: float
) -> ServiceProcess:
    await set_load(exporter, prometheus, 20)
    cluster.create(deployment("web", 2))
    cluster.create(target("web"))
    service = await chaos.service("one", clock_offset=offset)
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "ValidMetricFound",
        30,
        "a first decision on valid metrics",
    )
    return service


async def assert_skew_reported(service: ServiceProcess, offset: float) -> None:
    skew = await service.metric("autoscaler_clock_skew_seconds", peer="prometheus")
    assert skew is not None and abs(skew - offset) < 3, f"measured skew {skew}, clock offset {offset}"
    warnings = service.events("clock skew", peer="prometheus")
    assert len(warnings) == 1 and warnings[0]["level"] == "warning", warnings  # once per incident
    assert "clock" in warnings[0]["message"]


async def test_d4_a_clock_a_minute_behind_scales_up_in_the_normal_time(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Failed before: queries asked for the data of a minute ago (time= from the service's clock); the
    scale-up waited for that minute to pass, while ScalingActive said ValidMetricFound."""
    service = await skewed_service(chaos, cluster, exporter, prometheus, -60)
    took = await scale_up_seconds(cluster, exporter, prometheus)
    assert took < SCALE_UP_BOUND, f"the scale-up took {took:.0f}s"
    await assert_skew_reported(service, -60)


async def test_d4_a_clock_minutes_ahead_scales_and_says_clock(
    chaos: Chaos,
    cluster: KubeEmulator,
    proxy: PrometheusProxy,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
) -> None:
    """Failed before: queries asked for the data of 400 s in the future, Prometheus had none, the target
    never scaled, and its condition blamed "stale or absent data", not the clock."""
    service = await skewed_service(chaos, cluster, exporter, prometheus, 400)
    took = await scale_up_seconds(cluster, exporter, prometheus)
    assert took < SCALE_UP_BOUND, f"the scale-up took {took:.0f}s"
    await assert_skew_reported(service, 400)
    rule = proxy.add(Rule("queue_depth", transform=empty))  # data goes missing while the clocks disagree
    await wait_until(lambda: scaling_active(cluster, "web").get("status") == "False", 15, "ScalingActive False")
    message = scaling_active(cluster, "web")["message"]
    assert "no series" in message and "clock is 400s ahead of prometheus's" in message, message
    proxy.remove(rule)


async def window_after_a_step(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, step: float
) -> float:
    """Seconds from the load's fall (with the wall clock stepped by ``step`` at that moment) to the
    scale-down; the stabilization window is 4 s."""
    await set_load(exporter, prometheus, 80)
    cluster.create(deployment("web", 8))
    cluster.create(target("web"))
    service = await chaos.service("one", clock_offset=0)
    timeline = chaos.timeline("web")
    await wait_until(
        lambda: scaling_active(cluster, "web").get("reason") == "ValidMetricFound",
        30,
        "a first decision on valid metrics",
    )
    await asyncio.sleep(2.0)  # a few high recommendations in the window
    await set_load(exporter, prometheus, 10)
    service.set_clock_offset(step)
    dropped = monotonic()
    await wait_until(lambda: timeline.first(lambda s: (s.replicas or 8) < 8, dropped) is not None, 30, "the scale-down")
    scaled = timeline.first(lambda s: (s.replicas or 8) < 8, dropped)
    assert scaled is not None
    [stepped] = service.events("wall clock stepped")  # said once
    assert abs(stepped["seconds"] - step) < 5 and stepped["level"] == "warning"
    return scaled.at - dropped


async def test_d4_a_wall_clock_step_forward_does_not_shorten_the_window(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Failed before: with the step the queries' time= jumped 10 min ahead and found no data, so nothing
    scaled down within 30 s; with time= gone but "now" from the wall clock, the step would end the 4 s
    window at once (the next sync, ≤ 1 s). The last high recommendation came at most a period (1 s)
    before the service could read the low load, which set_load sees up to a scrape (1 s) late: 2 s of
    margin."""
    took = await window_after_a_step(chaos, cluster, exporter, prometheus, +600)
    assert took >= 4.0 - 2.0, f"scaled down {took:.1f}s after the load fell, inside the 4 s window"


async def test_d4_a_wall_clock_step_back_does_not_lengthen_the_window(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """Failed before: a step of −10 min kept the high recommendations "in the future", inside the window,
    for ten minutes (no scale-down)."""
    took = await window_after_a_step(chaos, cluster, exporter, prometheus, -600)
    assert took < 4.0 + 6.0, f"scaled down only {took:.1f}s after the load fell (4 s window)"
