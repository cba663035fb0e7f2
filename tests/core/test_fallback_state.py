"""``spec.fallback``: its health kept in the status across a restart, and the spec's fields and checks."""

from __future__ import annotations

import json

import pytest

from autoscaler.core.decision import TargetState
from autoscaler.core.fallback_spec import FallbackBehavior, FallbackSpec
from autoscaler.core.metric_health import MetricHealth, metric_keys
from autoscaler.core.rescale import resolve_scale_intent, scale_intent, state_before_write
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import SyncState
from autoscaler.service.sync.status import status_document
from autoscaler.service.sync.status.restore import restore
from autoscaler.service.sync.status.sections import fallback_status, restore_metric_health
from autoscaler.values.fields import SpecError
from tests.core.test_fallback import FAILED, QUEUE, queue, run, target

# -- across a restart ----------------------------------------------------------------------------------------


def test_a_restart_mid_outage_goes_on_counting_from_the_status() -> None:
    spec = target({"replicas": 6, "failureThreshold": 3})
    before = run(spec, [(t, 2, FAILED) for t in (100.25, 115, 130)])[-1]
    status = json.loads(
        json.dumps(status_document(before.decision, generation=1, now=130, extra=fallback_status(before.decision)))
    )
    assert status["metricHealth"] == {
        "external/queue": {"numberOfFailures": 3, "status": "Failing", "since": "1970-01-01T00:01:40.250000Z"}
    }
    restored = restore(status, 140).target
    assert restored.metric_health == (MetricHealth("external/queue", 3, 100.25),)
    after = run(spec, [(145, 2, FAILED)], SyncState(restored))[0]
    assert after.decision.replicas == 6  # the 4th failure in a row, as without the restart


def test_a_scale_write_recorded_before_it_is_sent_keeps_the_health() -> None:
    spec = target({"replicas": 6, "failureThreshold": 0})
    decided = run(spec, [(0, 2, FAILED)])[0].decision
    written = state_before_write(decided, scale_intent(decided, 0))
    assert written.metric_health == decided.metric_health
    landed, _ = resolve_scale_intent(written, spec, 6)
    assert landed.metric_health == decided.metric_health


def test_a_status_that_cannot_be_read_restores_what_it_can() -> None:
    document = {
        "external/queue": {"numberOfFailures": 2, "status": "Failing", "since": "2026-01-01T00:00:00Z"},
        "pods/rps": {"numberOfFailures": -1},
        "resource/cpu": "Happy",
        "external/other": {"numberOfFailures": 0, "status": "Happy"},
    }
    assert restore_metric_health(document) == (
        MetricHealth("external/queue", 2, 1767225600.0),
        MetricHealth("external/other"),
    )
    assert restore_metric_health(["not", "a", "mapping"]) == ()


def test_a_state_without_fallback_writes_no_metric_health() -> None:
    outcome = run(target(None), [(0, 2, queue(20))])[0]
    assert fallback_status(outcome.decision) == {}
    assert TargetState().metric_health == ()


# -- the spec ---------------------------------------------------------------------------------------------------


def test_metric_keys_are_readable_and_unique() -> None:
    selected = {"name": "queue", "selector": {"matchLabels": {"a": "b"}}}
    cpu_target = {"type": "Utilization", "averageUtilization": 50}
    spec = target(
        None,
        [
            QUEUE,
            {**QUEUE, "external": {**QUEUE["external"], "metric": selected}},
            {
                "type": "ContainerResource",
                "containerResource": {"name": "cpu", "container": "app", "target": cpu_target},
            },
        ],
    )
    assert metric_keys(spec.metrics) == ("external/queue", "external/queue#2", "containerResource/cpu/app")


def test_the_spec_defaults_to_static() -> None:
    spec = target({"replicas": 0, "failureDurationSeconds": 0})
    assert spec.fallback == FallbackSpec(0, FallbackBehavior.STATIC, None, 0)


@pytest.mark.parametrize(
    ("fallback", "problems"),
    [
        ({"failureThreshold": 3}, ["spec.fallback.replicas: Required value"]),
        (
            {"replicas": 2},
            ["spec.fallback: must set failureThreshold, failureDurationSeconds or both: when the fallback begins"],
        ),
        (
            {"replicas": -1, "failureThreshold": -1, "failureDurationSeconds": 86401},
            [
                "spec.fallback.replicas: must be between 0 and 2147483647",
                "spec.fallback.failureThreshold: must be between 0 and 2147483647",
                "spec.fallback.failureDurationSeconds: must be between 0 and 86400",
            ],
        ),
        (
            {"replicas": 2, "failureThreshold": 1, "behavior": "scalingModifiers", "failureTreshold": 1},
            [
                'spec.fallback.behavior: Unsupported value: "scalingModifiers": supported values: "static", '
                '"currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"',
                'spec.fallback.failureTreshold: unknown field (did you mean "failureThreshold"?)',
            ],
        ),
        ("six", ["spec.fallback: must be an object, not string"]),
    ],
)
def test_invalid_fallbacks_are_reported_with_their_paths(fallback: object, problems: list[str]) -> None:
    with pytest.raises(SpecError) as raised:
        parse_target_spec(
            {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 5, "fallback": fallback},
            require_queries=False,
        )
    assert [str(e) for e in raised.value.errors] == problems
