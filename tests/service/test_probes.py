"""The service's probes (service/probes.py) answer before the clients and the caches exist: ``/readyz``
fails with "starting" (the caches, each Prometheus backend), ``/healthz`` passes. The probes of a running
service are exercised end to end by the chaos tests (tests/chaos/test_backends.py, test_api_access.py)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from autoscaler.service.app import Service
from autoscaler.service.http import CheckResult, ReadinessCheck
from autoscaler.service.probes import Probes
from autoscaler.service.settings import parse_service_settings


async def answers(probes: Sequence[ReadinessCheck]) -> dict[str, CheckResult]:
    results: dict[str, CheckResult] = {}
    for probe in probes:
        result = probe.check()
        results[probe.name] = await result if inspect.isawaitable(result) else result
    return results


async def test_before_the_parts_exist_readiness_says_starting_and_liveness_passes() -> None:
    backends = {"url": "http://p:9090", "backends": {"tenant-b": {"url": "http://b:9090"}}}
    settings = parse_service_settings({"prometheus": backends, "leaderElection": {"enabled": True}})
    probes = Probes(Service(settings, identity="test"), stale_cache_limit=30.0)
    assert await answers(probes.readiness()) == {
        "caches": (False, "starting"),
        "leadership": (False, "starting"),  # its elector is not made yet
        "prometheus": (False, "starting"),
        "prometheus:tenant-b": (False, "starting"),
    }
    assert await answers(probes.liveness()) == {"watches": (True, "running")}
    alone = Probes(
        Service(parse_service_settings({"prometheus": backends, "leaderElection": {"enabled": False}})),
        stale_cache_limit=30.0,
    )
    assert dict(await answers(alone.readiness()))["leadership"] == (True, "leader election disabled")
