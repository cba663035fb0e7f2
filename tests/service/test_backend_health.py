"""A backend's health from its targets' syncs, and the budget of writes its failures may cost (issue 37,
item 5; the service end to end: tests/chaos/test_backend_brownout.py)."""

from __future__ import annotations

import pytest

from autoscaler.core.decision import Decision, Event
from autoscaler.core.history import DecisionHistory
from autoscaler.core.results import MetricOutcome
from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTarget, MetricTargetType
from autoscaler.kube.events import InvolvedObject
from autoscaler.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusHTTPError,
    PrometheusPartialAnswer,
    PrometheusRedirect,
    PrometheusResponseTooLarge,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler.prometheus.sending import is_backend_failure
from autoscaler.service.backends.health import (
    BackendHealth,
    BackendHealthSettings,
    backend_event,
    read_backend_health_settings,
    service_object,
)
from autoscaler.service.settings import parse_service_settings
from autoscaler.service.sync.status import HistoryDigest, LastDecisionDigest, StatusDigest
from autoscaler.values.fields import ErrorList, Obj, SpecError
from autoscaler.values.quantity import Quantity

QUEUE = MetricSpec(
    MetricSourceType.EXTERNAL, "queue", MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10"))
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def health(clock: Clock, **settings: float) -> BackendHealth:
    values = {"degraded_share": 0.5, "minimum_targets": 3, "writes_per_period": 4, "recovery_periods": 2} | settings
    return BackendHealth(
        "http://prom:9090",
        BackendHealthSettings(**values),
        15.0,
        clock=clock,
        wall_clock=lambda: 1.7e9,  # type: ignore[arg-type]
    )


def test_most_targets_failing_make_the_backend_degraded_at_once_and_it_recovers_after_healthy_periods() -> None:
    clock = Clock()
    backend = health(clock)
    assert backend.observe(("a", "t0"), failed=False) is None
    assert backend.observe(("a", "t1"), failed=True) is None
    assert backend.observe(("a", "t2"), failed=True) is None  # 2 of 3: not the minimum of 3 failed
    change = backend.observe(("a", "t3"), failed=True)  # 3 of 4 within the period: degraded now
    assert change is not None and change.degraded and (change.failed, change.read) == (3, 4)
    assert backend.degraded and backend.condition()["status"] == "True"
    assert "3 of the 4 targets" in backend.condition()["message"]
    for _ in range(2):  # two healthy periods in a row
        clock.now += 15
        assert backend.observe(("a", "t0"), failed=False) is None  # the first closes the period before
        for index in range(1, 4):
            backend.observe(("a", f"t{index}"), failed=False)
    clock.now += 15
    change = backend.observe(("a", "t0"), failed=False)
    assert change is not None and not change.degraded
    assert not backend.degraded and backend.condition()["reason"] == "BackendAnswers"


def test_a_brownout_near_the_share_keeps_the_backend_degraded() -> None:
    """Healthy again only below half the share: 4 of 10 failing (under 0.5, over 0.25) period after period
    keeps it degraded (it used to turn healthy and degraded again, an Event each time)."""
    clock = Clock()
    backend = health(clock)
    for index in range(10):
        backend.observe(("a", f"t{index}"), failed=index < 6)
    assert backend.degraded
    for _ in range(4):
        clock.now += 15
        for index in range(10):
            assert backend.observe(("a", f"t{index}"), failed=index < 4) is None
    assert backend.degraded
    for _ in range(3):
        clock.now += 15
        changes = [backend.observe(("a", f"t{index}"), failed=index < 2) for index in range(10)]
    assert not backend.degraded and sum(change is not None for change in changes) <= 1


def test_one_failing_target_among_healthy_ones_never_degrades_the_backend() -> None:
    clock = Clock()
    backend = health(clock, minimum_targets=1, degraded_share=0.5)
    for _ in range(5):
        for index in range(10):
            assert backend.observe(("a", f"t{index}"), failed=index == 3) is None
        clock.now += 15
    assert not backend.degraded


def test_writes_that_only_say_a_failure_share_a_budget_a_period() -> None:
    clock = Clock()
    backend = health(clock)
    assert [backend.admit_status(failed=True) for _ in range(6)] == [True] * 4 + [False] * 2
    assert backend.admit_event() is False and backend.held == {"status": 2, "event": 1}
    clock.now += 15 / 4  # a quarter of the period: one token back
    assert [backend.admit_status(failed=True) for _ in range(2)] == [True, False]
    assert backend.admit_status(failed=False)  # taking a failure back is free while the backend is healthy
    for index in range(3):
        backend.observe(("a", f"t{index}"), failed=True)
    assert backend.degraded
    clock.now += 15
    assert backend.admit_status(failed=False)  # ... and spends a token while it is degraded
    assert not backend.admit_event()  # the backend's own Event stands for the targets' meanwhile


def test_which_events_only_say_the_backend_failed() -> None:
    backend_failed = MetricOutcome(QUEUE, error="unable to get external metric queue: …", backend_failure=True)
    query_failed = MetricOutcome(QUEUE, error="rejected the query", backend_failure=False)

    def decision(*outcomes: MetricOutcome) -> Decision:
        return Decision(1, None, 1, False, "metrics-failed", "", outcomes, None, None, (), DecisionHistory(), 1, None)

    metric_event = Event("Warning", "FailedGetExternalMetric", backend_failed.error or "")
    all_failed = Event("Warning", "FailedComputeMetricsReplicas", "invalid metrics (1 invalid out of 1)…")
    assert backend_event(metric_event, decision(backend_failed))
    assert backend_event(all_failed, decision(backend_failed))
    assert not backend_event(all_failed, decision(backend_failed, query_failed))
    assert not backend_event(Event("Warning", "FailedGetExternalMetric", "rejected the query"), decision(query_failed))
    assert not backend_event(Event("Normal", "SuccessfulRescale", "New size: 2"), decision(backend_failed))


@pytest.mark.parametrize(
    ("error", "backend"),
    [
        (PrometheusTimeout("did not answer within 5s"), True),
        (PrometheusUnreachable("connection refused"), True),
        (PrometheusPartialAnswer("partial answer"), True),
        (PrometheusHTTPError("HTTP 503", status=503), True),
        (PrometheusHTTPError("HTTP 429", status=429), True),
        (PrometheusHTTPError("HTTP 401", status=401), False),
        (PrometheusBadQuery("HTTP 400", status=400), False),
        (PrometheusBadQuery("HTTP 422", status=422), False),
        (PrometheusResponseTooLarge("too large"), False),
        (PrometheusRedirect("redirect"), False),
    ],
)
def test_backend_failures_are_the_backends_not_the_querys(error: Exception, backend: bool) -> None:
    assert is_backend_failure(error) is backend  # type: ignore[arg-type]


def test_the_service_posts_on_its_pod_else_its_lease() -> None:
    pod = {"POD_NAME": "autoscaler-7d9", "POD_NAMESPACE": "autoscaler", "POD_UID": "1234"}
    assert service_object(("autoscaler", "autoscaler"), pod) == InvolvedObject(
        "v1", "Pod", "autoscaler", "autoscaler-7d9", "1234"
    )
    assert service_object(("autoscaler", "autoscaler-a"), {"POD_NAME": "x"}) == InvolvedObject(
        "coordination.k8s.io/v1", "Lease", "autoscaler", "autoscaler-a"
    )
    assert service_object(None, {}) is None


def test_settings_are_validated_with_their_path() -> None:
    assert parse_service_settings({"prometheus": {"url": "http://p"}}).backend_health == BackendHealthSettings()
    with pytest.raises(SpecError) as raised:
        parse_service_settings(
            {
                "prometheus": {"url": "http://p"},
                "backendHealth": {"degradedShare": 0, "writesPerPeriod": 0, "recoveryPeriods": 1.5, "minimum": 1},
            }
        )
    assert {(e.path, e.message) for e in raised.value.errors} >= {
        ("backendHealth.degradedShare", "must be between 0.01 and 1"),
        ("backendHealth.writesPerPeriod", "must be between 1 and 1000000"),
        ("backendHealth.recoveryPeriods", "must be an integer, not number"),
    }
    assert any(e.path == "backendHealth.minimum" and "unknown field" in e.message for e in raised.value.errors)
    errors = ErrorList()
    read = read_backend_health_settings(Obj({"writesPerPeriod": 7}, "backendHealth", errors))
    assert read == BackendHealthSettings(writes_per_period=7) and not errors


def condition(type_: str, status: str, reason: str, at: str = "2026-01-01T00:00:00Z") -> tuple[str, ...]:
    return (type_, status, reason, f"{reason}…", at)


def digest(*conditions: tuple[str, ...], error: str | None = None, desired: int = 1) -> StatusDigest:
    history = HistoryDigest(frozenset(), frozenset({1}), (), ())
    return StatusDigest(1, 1, desired, None, conditions, history, LastDecisionDigest(None, error), ())


def test_a_write_that_only_says_the_metrics_could_not_be_read() -> None:
    read = digest(
        condition("AbleToScale", "True", "ReadyForNewScale"),
        condition("ScalingActive", "True", "ValidMetricFound"),
    )
    failed = digest(
        condition("AbleToScale", "True", "SucceededGetScale"),
        condition("ScalingActive", "False", "FailedGetExternalMetric", "2026-01-01T00:00:15Z"),
        error="invalid metrics",
    )
    assert failed.differs_only_in_scaling_activity(read) and read.differs_only_in_scaling_activity(failed)
    assert not failed.differs_only_in_scaling_activity(None)
    scaled = digest(*read.conditions, desired=2)
    assert not scaled.differs_only_in_scaling_activity(read)
    unable = digest(condition("AbleToScale", "False", "FailedGetScale"), *read.conditions[1:])
    assert not unable.differs_only_in_scaling_activity(read)
    limited = digest(*read.conditions, condition("ScalingLimited", "True", "TooManyReplicas"))
    assert not limited.differs_only_in_scaling_activity(read)
