"""``autoscaler run`` against VictoriaMetrics (a single node, Debian's ``victoria-metrics``) in Prometheus'
place: the same settings but the URL, the same decisions.

What differs from Prometheus and why it does not change them here: VictoriaMetrics evaluates a query for "now"
``-search.latencyOffset`` in the past (30 s by default; the sandbox runs with 1 s, see tests/victoriametrics.py),
so a production setup sees each change that much later; it leaves NaN samples out (a NaN queue is "no series",
a failed metric either way); and the service's ``partial_response=false``/``deny_partial_response=1`` (on by
default) are accepted without effect by a single node.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler_sandbox import MetricsExporter
from kube_emulator import KubeEmulator
from tests.e2e.conftest import until
from tests.e2e.test_service_e2e import set_load, target
from tests.service.cluster import condition, deployment, replicas_of, status_of
from tests.victoriametrics import VictoriaMetricsSandbox

pytestmark = pytest.mark.prometheus


async def test_an_external_metric_scales_up_and_down_against_victoriametrics(
    cluster: KubeEmulator, victoriametrics: VictoriaMetricsSandbox, exporter: MetricsExporter, services: Any
) -> None:
    set_load(exporter, 20, victoriametrics)  # 20 / 10 per pod -> 2 replicas
    cluster.create(deployment("web", 2))
    cluster.create(target("web", "web", {"scaleDown": {"stabilizationWindowSeconds": 4}}))
    service = services("one", cluster, victoriametrics)
    await until(
        lambda: (condition(status_of(cluster, "web"), "ScalingActive") or {}).get("status") == "True",
        what="the first decision",
    )
    assert replicas_of(cluster, "web") == 2
    for depth, replicas in ((40, 4), (80, 8)):
        set_load(exporter, depth)
        await until(lambda r=replicas: replicas_of(cluster, "web") == r, seconds=30, what=f"scale-up to {replicas}")
    set_load(exporter, 10)
    await until(
        lambda: replicas_of(cluster, "web") == 1 and status_of(cluster, "web").get("desiredReplicas") == 1,
        seconds=30,
        what="the scale-down after the window, in the status too",
    )
    active = condition(status_of(cluster, "web"), "ScalingActive") or {}
    assert active.get("reason") == "ValidMetricFound", active
    logged = [line for line in service.lines() if "answered with a warning" in str(line.get("event", ""))]
    assert not logged, logged  # a whole answer from a single node: no warning, nothing partial
