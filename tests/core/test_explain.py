"""Decisions in words for people (``autoscaler explain``, the demo's timeline, the target's status): upstream's
machine-facing texts stay in conditions and events, the explanation reads cleanly."""

from __future__ import annotations

from autoscaler.core.decision import decide
from autoscaler.core.explain import explain_lines
from autoscaler.core.observation import ExternalReading, MetricFailure, Observation, ScaleInfo
from autoscaler.core.spec import MetricSourceType, MetricSpec, MetricTarget, MetricTargetType
from autoscaler.values.quantity import Quantity
from tests.core.builders import pod
from tests.core.test_decision import NOW, OLD, SETTINGS, target

RPS = MetricSpec(
    MetricSourceType.EXTERNAL,
    "requests_per_second",
    MetricTarget(MetricTargetType.AVERAGE_VALUE, average_value=Quantity.parse("10")),
)
CAUSE = 'bad_data: 1:8: parse error: unexpected "}" in label matching'


def observe(replicas: int, reading: ExternalReading | MetricFailure) -> Observation:
    return Observation(ScaleInfo(replicas, replicas, "app=web"), [pod(f"p{i}") for i in range(replicas)], [reading])


def test_a_metric_without_a_selector_is_not_printed_with_nil() -> None:
    decision = decide(target(RPS), observe(2, ExternalReading((80_000,), NOW)), OLD, SETTINGS, NOW)
    assert decision.scale
    assert "(<nil>)" in decision.rescale_reason  # upstream's text, kept for events and conditions
    text = "\n".join(explain_lines(decision, NOW))
    assert "(<nil>)" not in text
    assert "external metric requests_per_second:" in text
    assert "Largest proposal: 8 from external metric requests_per_second." in text


def test_a_failed_query_s_cause_is_said_once() -> None:
    decision = decide(target(RPS), observe(3, MetricFailure(CAUSE)), OLD, SETTINGS, NOW)
    assert decision.error is not None and decision.error.count("failed to get") == 2  # upstream's wrapping
    lines = explain_lines(decision, NOW)
    assert sum(line.count(CAUSE) for line in lines) == 1
    failed = next(line for line in lines if CAUSE in line)
    assert failed.count("unable to get") + failed.count("failed to get") <= 1
    assert "No scaling: every metric failed, so there is no proposal." in lines
