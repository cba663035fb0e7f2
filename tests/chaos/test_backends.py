"""Issue 36, item 5, end to end: ``autoscaler run`` against the API emulator with two real Prometheus servers as
two backends, the default one (``prometheus.url``) and a named one (``prometheus.backends.second``, reached with
a tenant header and a bearer token read from a file). One target reads one metric from each: each metric is
read from its own server (the second's series exists only there), and the target scales on both. A metric
naming a backend the settings lack fails with a clear message; ``/api/backends``, ``/readyz`` and
``autoscaler_prometheus_backend_degraded`` speak of each backend by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import queue_metric, replicas_of, set_load, target
from tests.service.cluster import deployment
from tests.warm_prometheus import Scraped, WarmPrometheus

BACKLOG = 'sum(backlog{queue="b"})'


@pytest.fixture(scope="module")
def second(warm_prometheus: WarmPrometheus) -> Iterator[Scraped]:
    """Another exporter and the Prometheus scraping it alone (taken warm: tests/warm_prometheus.py): ``backlog``
    is in this one only."""
    taken = warm_prometheus.take()
    try:
        yield taken
    finally:
        taken.close()


@pytest.fixture(scope="module")
def second_exporter(second: Scraped) -> MetricsExporter:
    second.exporter.set("backlog", {"queue": "b"}, 0)
    return second.exporter


@pytest.fixture(scope="module")
def second_prometheus(second: Scraped, second_exporter: MetricsExporter) -> PrometheusSandbox:
    assert second.prometheus is not None, "the prometheus binary is missing"
    second.prometheus.wait_for('backlog{queue="b"}', timeout=30)
    return second.prometheus


def _metric(query: str, name: str, backend: str | None) -> dict[str, object]:
    metric = queue_metric(query, name=name)
    if backend is not None:
        metric["external"]["backend"] = backend  # type: ignore[index]
    return metric


async def test_a_target_reads_one_metric_from_each_of_two_prometheus_servers(
    chaos: Chaos,
    cluster: KubeEmulator,
    exporter: MetricsExporter,
    prometheus: PrometheusSandbox,
    second_exporter: MetricsExporter,
    second_prometheus: PrometheusSandbox,
    tmp_path: Path,
) -> None:
    token = tmp_path / "second-token"
    token.write_text("second-backend-token\n")
    await set_load(exporter, prometheus, 30)  # default backend: 3 replicas of 10
    await set_load(second_exporter, second_prometheus, 0, {"queue": "b"}, metric="backlog")
    cluster.create(deployment("worker", 1))
    cluster.create(
        target(
            "worker",
            metrics=[
                _metric('sum(queue_depth{queue="jobs"})', "queue_depth", None),
                _metric(BACKLOG, "backlog", "second"),
            ],
        )
    )
    cluster.create(deployment("stray", 2))
    cluster.create(target("stray", metrics=[_metric(BACKLOG, "backlog", "third")]))
    second = {
        "url": second_prometheus.url,
        "headers": {"X-Scope-OrgID": "tenant-b"},
        "bearerTokenFile": str(token),
        "timeoutSeconds": 2,
        "retries": 0,
    }
    instance = await chaos.service("one", prometheus={"backends": {"second": second}})

    await wait_until(lambda: replicas_of(cluster, "worker") == 3, 40, "worker at 3 (the default backend's metric)")
    await set_load(second_exporter, second_prometheus, 50, {"queue": "b"}, metric="backlog")
    await wait_until(lambda: replicas_of(cluster, "worker") == 5, 40, "worker at 5 (the second backend's metric)")
    assert scaling_active(cluster, "worker").get("status") == "True"

    # A metric naming a backend the settings lack: a clear failure, and nothing scales on it.
    await wait_until(lambda: scaling_active(cluster, "stray").get("status") == "False", 20, "stray's failure")
    message = scaling_active(cluster, "stray")["message"]
    assert "backend third is not configured: the service's settings have default, second" in message
    assert replicas_of(cluster, "stray") == 2

    _, text = await instance.get("/api/backends")
    listed = {item["name"]: item for item in json.loads(text)["items"]}
    assert list(listed) == ["default", "second"]
    assert listed["second"]["backend"] == second_prometheus.url
    assert listed["second"]["conditions"][0]["status"] == "False"
    ready, body = await instance.ready()
    assert ready, body
    checks = {check["name"]: check for check in body["checks"]}
    assert checks["prometheus"]["ok"] and checks["prometheus:second"]["ok"], checks
    degraded = await instance.metric(
        "autoscaler_prometheus_backend_degraded", backend=second_prometheus.url, name="second"
    )
    assert degraded == 0
    answered = await instance.metric("autoscaler_prometheus_backend_queries_total", name="second", outcome="answered")
    assert answered is not None and answered > 0
    assert "second-backend-token" not in instance.log.read_text()
