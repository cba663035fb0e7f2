"""Every sink redacts with the service's one :class:`KnownSecrets`, whatever text reaches it: the status the
writer sends and its Events (against the API emulator), ``/api/targets`` and the probes' details, and the
log, a value echoed bare included. ``currentMetrics`` (the spec's metric identities) are left as they are."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.api import KubeApi
from autoscaler.kube.events import EventRecorder
from autoscaler.kube.scale import ScaleAccess
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.service.cluster.targets import target_from_object
from autoscaler.service.http import HttpServer, ReadinessCheck, StatusMap
from autoscaler.service.settings import HttpSettings, LoggingSettings
from autoscaler.service.sync.scales import ClusterScales
from autoscaler.service.sync.writes import ApiWriter
from autoscaler.service.telemetry.logs import configure_logging, redact_known_secrets
from autoscaler.service.telemetry.metrics import ServiceMetrics
from kube_emulator import KubeEmulator
from tests.service.cluster import CRD, target

SECRET = "echoed-secret-value-4e1f"
TENANT = "team-a"
SECRETS = KnownSecrets(
    [PrometheusSettings(url="http://p", headers={"X-Scope-OrgID": TENANT}, query_parameters={"access_token": SECRET})]
)


def status(message: str) -> dict[str, Any]:
    condition = {"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric", "message": message}
    metric = {"name": "q", "selector": {"matchLabels": {"tenant": TENANT}}}
    return {
        "conditions": [condition],
        "currentMetrics": [{"type": "External", "external": {"metric": metric}}],
        "lastDecision": {"error": message, "explanation": [message], "replicas": 3},
    }


ECHO = f"Prometheus rejected the query (HTTP 400, bad_data: cannot parse {SECRET} for {TENANT})"


def assert_redacted(document: dict[str, Any]) -> None:
    text = json.dumps(document)
    assert SECRET not in text, text
    assert document["conditions"][0]["message"] == ECHO.replace(SECRET, "<redacted>").replace(TENANT, "<redacted>")
    assert document["currentMetrics"][0]["external"]["metric"]["selector"] == {"matchLabels": {"tenant": TENANT}}
    assert document["lastDecision"]["replicas"] == 3


async def test_the_writer_redacts_statuses_and_events(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.install_crd(CRD)
    stored = emulator.create(target("web", "web"))
    kube = KubeApi(api)
    scales = ClusterScales(lambda namespace, name: None, ScaleAccess(kube))
    writer = ApiWriter(kube, scales, EventRecorder(kube), may_write=lambda: True, static=False)
    writer.redaction = SECRETS
    subject = target_from_object(stored)
    await writer.write_status(subject, status(ECHO), None)
    await writer.record_event(subject, "Warning", "FailedGetExternalMetric", ECHO)
    written = (emulator.get("scalingtargets.autoscaler.dev", "web") or {})["status"]
    assert_redacted(written)
    [event] = emulator.events("default", involved_name="web")
    assert SECRET not in event["message"] and "<redacted>" in event["message"]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        yield client


async def test_the_http_server_redacts_target_statuses_and_probe_details(session: aiohttp.ClientSession) -> None:
    server = HttpServer(
        HttpSettings(address="127.0.0.1", port=0),
        ServiceMetrics(process_metrics=False),
        readiness=[ReadinessCheck("prometheus", lambda: (False, ECHO))],
        targets=StatusMap({("default", "web"): status(ECHO)}),
    )
    server.redaction = SECRETS
    await server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        async with session.get(f"{base}/api/targets") as response:
            listed = await response.json()
        async with session.get(f"{base}/api/targets/default/web") as response:
            one = await response.json()
        async with session.get(f"{base}/readyz") as response:
            ready = await response.json()
    finally:
        await server.stop()
    assert_redacted(listed["items"][0]["status"])
    assert_redacted(one["status"])
    assert ready["checks"][0]["detail"] == ECHO.replace(SECRET, "<redacted>").replace(TENANT, "<redacted>")


@pytest.fixture
def known_in_logs() -> Iterator[None]:
    redact_known_secrets(SECRETS)
    try:
        yield
    finally:
        redact_known_secrets(KnownSecrets())


@pytest.mark.usefixtures("known_in_logs")
@pytest.mark.parametrize("fmt", ["json", "console"])
def test_the_log_redacts_known_values_echoed_bare(fmt: str) -> None:
    import structlog

    stream = io.StringIO()
    configure_logging(LoggingSettings(format=fmt, level="info"), stream=stream)
    structlog.get_logger("test").warning(ECHO, error=ECHO, values=[SECRET])
    output = stream.getvalue()
    assert SECRET not in output and output.count("<redacted>") >= 3, output
