"""A metric's failure reads the same at every sync while it lasts (issue 37, item 10): the values a backend's
error text changes from sync to sync are shown as what they are, the rest is kept word for word."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autoscaler.core.conditions import steady_message
from autoscaler.core.decision import decide
from autoscaler.core.observation import MetricFailure, Observation, ScaleInfo
from tests.core.builders import pod
from tests.core.test_decision import NOW, OLD, QUEUE, SETTINGS, target

# VictoriaMetrics' deadline error (lib/searchutils' Deadline.String): our deadline, the time taken, the range.
VM = (
    'error when executing query="sum(rate(x[5m]))" on the time range (start=1796171591022, end=1796171891022, '
    "step=15000): timeout exceeded: 1.987 seconds (elapsed 1.990 seconds)"
)


@pytest.mark.parametrize(
    ("text", "steady"),
    [
        (
            VM,
            'error when executing query="sum(rate(x[5m]))" on the time range (start=<number>, end=<number>, '
            "step=15000): timeout exceeded: <duration> (elapsed <duration>)",
        ),
        (
            "expanding series: context deadline exceeded after 1m2.05s",
            "expanding series: context deadline exceeded after <duration>",
        ),
        ("query took 150.25ms", "query took <duration>"),
        ("at 2026-12-02T00:38:10.417889Z", "at <time>"),
        ("request 123e4567-e89b-12d3-a456-426614174000 failed", "request <id> failed"),
        ("traceID=3f2a9c1b7d4e5f60a1b2c3d4", "traceID=<id>"),
        (
            "read tcp 10.0.0.5:51234->10.0.0.7:10901: i/o timeout",
            "read tcp 10.0.0.5:<port>->10.0.0.7:10901: i/o timeout",
        ),
    ],
)
def test_changing_values_read_as_what_they_are(text: str, steady: str) -> None:
    assert steady_message(text) == steady
    assert steady_message(steady) == steady  # a steady text stays as it is


@pytest.mark.parametrize(
    "text",
    [
        "Prometheus at http://127.0.0.1:39317 answered HTTP 503: unavailable: overloaded",
        "Prometheus at http://prom:9090 did not answer within 2.5s",  # a setting (one digit of fraction)
        "the query selects more than 50000000 samples; limit 5m, range 721h0m0s",
        "no usable sample for any of the target's 3 pods: the query returned no series",
    ],
)
def test_settings_limits_and_words_are_kept(text: str) -> None:
    assert steady_message(text) == text


def test_a_failure_that_lasts_leaves_the_conditions_as_they_were() -> None:
    """Two syncs whose metric failed with the backend's numbers changed: the second leaves the conditions
    and the sync's error exactly as the first made them (nothing to write)."""
    spec = target(QUEUE)
    first = decide(spec, failing(VM), OLD, SETTINGS, NOW)
    state = replace(OLD, conditions=first.conditions, history=first.history)
    second = decide(
        spec, failing(VM.replace("1.987", "1.912").replace("1796171591022", "1796171606022")), state, SETTINGS, NOW + 15
    )
    assert second.conditions == first.conditions
    assert second.error == first.error
    active = next(x for x in second.conditions if x.type == "ScalingActive")
    assert (
        active.reason == "FailedGetExternalMetric"
        and "timeout exceeded: <duration> (elapsed <duration>)" in active.message
    )


def failing(message: str) -> Observation:
    return Observation(ScaleInfo(3, 3, "app=web"), [pod(f"p{i}") for i in range(3)], [MetricFailure(message)])
