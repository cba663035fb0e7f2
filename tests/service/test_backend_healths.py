"""Each Prometheus backend's health on its own (issue 36, item 5): a target counts toward each backend it reads
from, a brownout of one backend makes that one degraded, and the writes its failures cost come out of its own
budget (service/backends/healths.py; one backend's health: test_backend_health.py)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from autoscaler.core.decision import Decision, Event
from autoscaler.core.history import DecisionHistory
from autoscaler.core.results import MetricOutcome
from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTarget, MetricTargetType
from autoscaler.service.backends.health import BackendHealth, BackendHealthSettings
from autoscaler.service.backends.healths import BackendHealths
from autoscaler.service.settings import parse_service_settings
from autoscaler.values.quantity import Quantity

SETTINGS = BackendHealthSettings(degraded_share=0.5, minimum_targets=3, writes_per_period=2, recovery_periods=2)


def spec(name: str, backend: str | None) -> MetricSpec:
    target = MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
    return MetricSpec(MetricSourceType.EXTERNAL, name, target, query="q", backend=backend)


def read(name: str, backend: str | None, *, failed: bool) -> MetricOutcome:
    error = f"{name}: no answer in time" if failed else None
    return MetricOutcome(spec(name, backend), error=error, backend_failure=failed)


def decision(*outcomes: MetricOutcome) -> Decision:
    return Decision(1, None, 1, False, "", "", outcomes, None, None, (), DecisionHistory(), 1, None)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def healths(clock: Clock | None = None) -> BackendHealths:
    clock = clock or Clock()
    return BackendHealths(
        {
            name: BackendHealth(f"http://{name}:9090", SETTINGS, 15.0, name=name, clock=clock)
            for name in ("default", "tenant-b")
        }
    )


async def test_a_target_counts_toward_each_backend_it_reads_from() -> None:
    clock = Clock()
    group = healths(clock)
    default, tenant = group.healths["default"], group.healths["tenant-b"]
    for index in range(4):  # every target reads one metric from each; tenant-b fails them all
        failed = await group.observe_sync(
            ("ns", f"t{index}"), decision(read("queue", None, failed=False), read("rps", "tenant-b", failed=True))
        )
        assert failed
    assert tenant.degraded and not default.degraded
    assert (tenant.failed, tenant.read) == (3, 3)  # degraded at once, at the third failing target (the minimum)
    clock.now += 15  # the period closes at each backend's next sync: each counted the 4 targets that read it
    await group.observe_sync(
        ("ns", "t0"), decision(read("queue", None, failed=False), read("rps", "tenant-b", failed=True))
    )
    assert (default.failed, default.read) == (0, 4) and (tenant.failed, tenant.read) == (4, 4)
    assert "Prometheus backend tenant-b at http://tenant-b:9090" in tenant.condition()["message"]
    assert [document["name"] for document in group.documents()] == ["default", "tenant-b"]
    # A target reading only the default backend says nothing of tenant-b.
    assert not await group.observe_sync(("ns", "other"), decision(read("queue", None, failed=False)))
    # A metric of a backend the settings lack counts toward none.
    assert not await group.observe_sync(("ns", "stray"), decision(read("x", "nowhere", failed=True)))


async def test_the_writes_a_backend_failure_costs_come_out_of_that_backends_budget() -> None:
    group = healths()
    default, tenant = group.healths["default"], group.healths["tenant-b"]
    on_tenant = decision(read("queue", None, failed=False), read("rps", "tenant-b", failed=True))
    on_default = decision(read("queue", None, failed=True), read("rps", "tenant-b", failed=False))
    assert [group.admit_status(on_tenant, failed=True) for _ in range(3)] == [True, True, False]
    assert tenant.held["status"] == 1 and default.held["status"] == 0
    assert group.admit_status(on_default, failed=True)  # the default backend's budget is untouched
    assert group.admit_status(on_tenant, failed=False)  # taking a failure back is free while none is degraded
    for index in range(3):
        await group.observe_sync(("ns", f"t{index}"), on_tenant)
    assert tenant.degraded
    # While tenant-b is degraded its own Event stands for its targets' Events; the default one's still go out.
    assert not group.admit_event(Event("Warning", "FailedGetExternalMetric", "rps: no answer in time"), on_tenant)
    assert tenant.held["event"] == 1
    assert group.admit_event(Event("Warning", "FailedGetExternalMetric", "queue: no answer in time"), on_default)


def test_one_health_per_configured_backend_in_the_services_metrics() -> None:
    settings = parse_service_settings(
        {"prometheus": {"url": "http://prometheus:9090", "backends": {"tenant-b": {"url": "http://mimir:8080"}}}}
    )
    registry = CollectorRegistry()
    group = BackendHealths.for_service(settings, registry)
    assert {name: health.backend for name, health in group.healths.items()} == {
        "default": "http://prometheus:9090",
        "tenant-b": "http://mimir:8080",
    }
    assert (
        registry.get_sample_value(
            "autoscaler_prometheus_backend_degraded", {"backend": "http://mimir:8080", "name": "tenant-b"}
        )
        == 0.0
    )
