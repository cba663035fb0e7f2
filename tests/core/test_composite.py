"""The composite metric (spec.composite, KEDA's scalingModifiers): its formula's checks and values, its spec's
validation with paths, and what the sync's decide sees and explains."""

from __future__ import annotations

import re
from typing import Any

import pytest

from autoscaler.core.composite import apply_composite, composite_value, evaluate_composite
from autoscaler.core.composite_formula import FormulaError, FormulaProblem, compile_formula
from autoscaler.core.observation import (
    ExternalReading,
    MetricFailure,
    MetricReading,
    Observation,
    ResourceReading,
    ScaleInfo,
)
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import MetricSourceType, MetricTargetType, TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import SyncInputs, SyncState, sync
from autoscaler.values.fields import SpecError
from autoscaler.values.quantity import Quantity
from tests.core.builders import pod

VARIABLES = frozenset({"trig_one", "trig_two", "trig_three"})


def value_of(formula: str, **values: float) -> float:
    return compile_formula(formula, VARIABLES).evaluate(values)


def problem_of(formula: str) -> str:
    with pytest.raises(FormulaProblem) as info:
        compile_formula(formula, VARIABLES)
    return str(info.value)


@pytest.mark.parametrize(
    ("formula", "values", "expected"),
    [
        # The formulas of KEDA's documentation (concepts/scaling-deployments, scalingModifiers).
        ("trig_one + trig_two", {"trig_one": 3, "trig_two": 4}, 7),
        ("(trig_one + trig_two) / 2", {"trig_one": 3, "trig_two": 4}, 3.5),
        ("trig_one < 2 ? trig_one + trig_two : 1", {"trig_one": 1, "trig_two": 4}, 5),
        ("trig_one < 2 ? trig_one + trig_two : 1", {"trig_one": 2, "trig_two": 4}, 1),
        ("trig_one > 100 ? trig_one : trig_two", {"trig_one": 150, "trig_two": 4}, 150),
        # Integer literals are doubles: expr's division, not CEL's integer one.
        ("7 / 2", {}, 3.5),
        ("trig_one / 2 * 2", {"trig_one": 3}, 3),
        # Comparisons, && || ! and nested conditions.
        (
            "trig_one >= 2 && trig_two != 3 || !(trig_three == 0) ? 1 : 0",
            {"trig_one": 2, "trig_two": 3, "trig_three": 0},
            0,
        ),
        (
            "trig_one >= 2 && trig_two != 3 || !(trig_three == 0) ? 1 : 0",
            {"trig_one": 2, "trig_two": 4, "trig_three": 0},
            1,
        ),
        ("trig_one > 1 ? (trig_two > 1 ? 10 : 20) : 30", {"trig_one": 2, "trig_two": 0}, 20),
        ("trig_one > 1 ? 10 : trig_two > 1 ? 20 : 30", {"trig_one": 0, "trig_two": 2}, 20),
        # The functions.
        ("min(trig_one, trig_two, 10)", {"trig_one": 3, "trig_two": 4}, 3),
        ("max([trig_one, trig_two])", {"trig_one": 3, "trig_two": 4}, 4),
        ("sum(trig_one, trig_two, trig_three)", {"trig_one": 1, "trig_two": 2, "trig_three": 3}, 6),
        ("mean([trig_one, trig_two])", {"trig_one": 1, "trig_two": 2}, 1.5),
        ("median(trig_one, trig_two, trig_three)", {"trig_one": 9, "trig_two": 1, "trig_three": 5}, 5),
        ("abs(trig_one - trig_two)", {"trig_one": 1, "trig_two": 4}, 3),
        ("ceil(trig_one / 10) + floor(trig_two / 10)", {"trig_one": 11, "trig_two": 19}, 3),
        ("round(2.5) + round(-2.5) + round(trig_one)", {"trig_one": 0.4}, 0),  # halves away from zero
        ("int(trig_one) + float(trig_two) + double(1)", {"trig_one": -2.7, "trig_two": 0.5}, -0.5),
        ("pow(trig_one, 2)", {"trig_one": 3}, 9),
        ("0x10 + 1u - -1", {}, 18),
    ],
)
def test_a_formula_computes_what_it_would_in_keda(formula: str, values: dict[str, float], expected: float) -> None:
    assert value_of(formula, **values) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("formula", "values", "message"),
    [
        ("trig_one / trig_two", {"trig_one": 1, "trig_two": 0}, "the formula gave +Inf (division by zero?)"),
        ("-trig_one / trig_two", {"trig_one": 1, "trig_two": 0}, "the formula gave -Inf (division by zero?)"),
        ("pow(trig_one, 0.5)", {"trig_one": -1}, "the formula gave NaN"),
        ("trig_one / trig_two", {"trig_one": 0, "trig_two": 0}, "the formula gave NaN (0/0"),
        ("pow(10, trig_one)", {"trig_one": 400}, "the formula gave +Inf"),
    ],
)
def test_a_value_that_is_not_a_finite_number_is_an_error(formula: str, values: dict[str, float], message: str) -> None:
    with pytest.raises(FormulaError, match=r"^" + re.escape(message)):
        value_of(formula, **values)


def test_a_syntax_error_names_line_column_and_shows_the_caret() -> None:
    # cel-python points at the last token it read.
    assert (
        problem_of("(trig_one + trig_two")
        == "syntax error at line 1, column 13:\n    (trig_one + trig_two\n                ^"
    )
    assert problem_of("trig_one\n  + * trig_two").startswith("syntax error at line 2, column 5:\n      + * trig_two\n")
    assert problem_of("trig_one ?? 0").startswith("syntax error at line 1, column 11:")  # expr's ??: not CEL


@pytest.mark.parametrize(
    ("formula", "start"),
    [
        (
            "trig_one + trig_four",
            'unknown variable "trig_four" (the variables are the names of the target\'s External metrics: '
            "trig_one, trig_three, trig_two) at line 1, column 12:",
        ),
        (
            "count(trig_one)",
            'unknown function "count" (the functions: abs, ceil, double, float, floor, int, max, mean, median, min, '
            "pow, round, sum) at line 1, column 1:",
        ),
        ("size(trig_one)", 'unknown function "size"'),  # CEL's own functions are not formula functions
        ("trig_one > 1", "the formula must compute a number, not a boolean"),
        ("trig_one ? 1 : 2", "the condition of ?: must be a boolean, not a number"),
        ("trig_one > 1 ? true : 2", "the branches of ?: must agree"),
        ("trig_one + (trig_two > 1)", "each side of + must be a number, not a boolean"),
        ("!trig_one", "the operand of ! must be a boolean"),
        ("trig_one % 2", "% (remainder) is not supported"),
        ("trig_one.size()", "method calls (a.f()) are not supported"),
        ("trig_one.value", "field selection (a.b) is not supported"),
        ("'queue'", "strings are not supported"),
        ("null", "null is not supported"),
        ("trig_one in [1]", "'in' is not supported"),
        ("[trig_one][0]", "indexing (a[i]) is not supported"),
        ("{1: 2}", "maps are not supported"),
        ("[trig_one]", "a list is only an argument of min, max, sum, mean or median"),
        ("min()", "min takes at least one number"),
        ("pow(trig_one)", "pow takes 2 arguments, not 1"),
        ("abs(trig_one, trig_two)", "abs takes 1 argument, not 2"),
    ],
)
def test_a_formula_that_cannot_be_accepted_says_why(formula: str, start: str) -> None:
    assert problem_of(formula).startswith(start)


def test_the_position_of_a_problem_is_shown_with_a_caret() -> None:
    assert problem_of("trig_one + trig_four").endswith("\n    trig_one + trig_four\n               ^")


def test_a_formula_is_compiled_once() -> None:
    first = compile_formula("trig_one * 2", VARIABLES)
    assert compile_formula("trig_one * 2", VARIABLES) is first
    assert first.variables == ("trig_one",)


# The spec: parsed with its metrics, every problem at its path.


def external(name: str, average: str = "10") -> dict[str, Any]:
    return {
        "type": "External",
        "external": {
            "metric": {"name": name},
            "target": {"type": "AverageValue", "averageValue": average},
            "query": "q",
        },
    }


CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}


def target_spec(composite: dict[str, Any], *metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
        "maxReplicas": 20,
        "metrics": list(metrics) or [external("queue_a"), CPU, external("queue_b")],
        "composite": composite,
    }


def errors_of(data: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_target_spec(data)
    return [str(e) for e in info.value.errors]


def test_the_composite_parses_with_its_defaults() -> None:
    spec = parse_target_spec(
        target_spec(
            {"formula": "(queue_a + queue_b) / 2", "target": {"type": "Value", "value": "10"}, "activationTarget": "2"}
        )
    )
    assert spec.composite is not None
    assert spec.composite.name == "composite-metric"
    assert spec.composite.target.type is MetricTargetType.VALUE
    assert spec.composite.target.value == Quantity.parse("10")
    assert spec.composite.activation_target == Quantity.parse("2")
    assert (
        parse_target_spec(
            target_spec(
                {"formula": "queue_a", "target": {"type": "AverageValue", "averageValue": "5"}, "name": "backlog"}
            )
        ).composite.name
        == "backlog"
    )  # type: ignore[union-attr]


def test_every_problem_of_the_composite_is_reported_at_its_path() -> None:
    errors = errors_of(
        target_spec(
            {
                "formula": "(queue_a + queue_c) / 2",
                "target": {"type": "Utilization", "averageUtilization": 50},
                "extra": 1,
            },
        )
    )
    assert errors[0].startswith(
        "spec.composite.target.type: Utilization is not a valid target type for a External metric"
    )
    assert errors[1] == "spec.composite.extra: unknown field"
    assert errors[2].startswith(
        'spec.composite.formula: unknown variable "queue_c" (the variables are the names of the target\'s '
        "External metrics: queue_a, queue_b) at line 1, column 12:"
    )
    assert errors_of(target_spec({"target": {"type": "AverageValue", "averageValue": "5"}})) == [
        "spec.composite.formula: Required value"
    ]
    assert errors_of(target_spec({"formula": "1 +", "target": {"type": "AverageValue", "averageValue": "5"}})) == [
        "spec.composite.formula: syntax error at line 1, column 3:\n    1 +\n      ^"
    ]


def test_the_inputs_must_be_identifiers_used_once_and_exist() -> None:
    composite = {"formula": "queue_a", "target": {"type": "AverageValue", "averageValue": "5"}}
    errors = errors_of(target_spec(composite, external("queue_a"), external("queue-b"), external("queue_a")))
    assert errors[0].startswith('spec.metrics[1].external.metric.name: "queue-b" is not a formula variable')
    assert errors[1].startswith('spec.metrics[2].external.metric.name: Duplicate value: "queue_a"')
    assert errors_of(target_spec(composite, CPU)) == [
        "spec.composite: Required value: a composite metric computes its value from the target's External metrics; "
        "spec.metrics has none"
    ]
    reserved = errors_of(
        target_spec({"formula": "1", "target": {"type": "AverageValue", "averageValue": "5"}}, external("null"))
    )
    assert reserved[0].startswith('spec.metrics[0].external.metric.name: "null" is not a formula variable')


# What decide sees.

SPEC = parse_target_spec(
    target_spec(
        {
            "formula": "(queue_a + queue_b) / 2",
            "target": {"type": "AverageValue", "averageValue": "10"},
            "activationTarget": "3",
        }
    )
)


def observation(*readings: MetricReading, replicas: int = 2) -> Observation:
    pods = [pod(f"worker-{index}") for index in range(replicas)]
    return Observation(ScaleInfo(replicas, replicas, "app=worker"), pods, readings)


def test_decide_sees_the_composite_in_place_of_the_external_metrics_and_keeps_the_others() -> None:
    seen_spec, seen, notes = apply_composite(
        SPEC, observation(ExternalReading((30_000, 2_000), 5.0), ResourceReading({}), ExternalReading((10_000,), 4.0))
    )
    assert [(m.type, m.name) for m in seen_spec.metrics] == [
        (MetricSourceType.EXTERNAL, "composite-metric"),
        (MetricSourceType.RESOURCE, "cpu"),
    ]
    composite_metric = seen_spec.metrics[0]
    assert composite_metric.target == SPEC.composite.target  # type: ignore[union-attr]
    assert seen_spec.composite is None  # applying it again changes nothing
    assert seen.readings == [ExternalReading((21_000,), 4.0), ResourceReading({})]
    assert notes == (
        "Composite metric composite-metric = (queue_a + queue_b) / 2 with queue_a = 32, queue_b = 10 → 21.",
    )


def test_the_value_becomes_milli_as_keda_makes_it_toward_zero() -> None:
    spec = parse_target_spec(target_spec({"formula": "queue_a / 3", "target": {"type": "Value", "value": "1"}}))
    result = evaluate_composite(
        spec.composite, spec.metrics, [ExternalReading((1_000,), 0.0), ResourceReading({}), ExternalReading((0,), 0.0)]
    )  # type: ignore[arg-type]
    assert result.reading == ExternalReading((333,), 0.0)


def test_a_failed_input_fails_the_composite_naming_it() -> None:
    readings = (MetricFailure("no data", backend=True), ResourceReading({}), ExternalReading((10_000,), 4.0))
    _, seen, notes = apply_composite(SPEC, observation(*readings))
    assert seen.readings[0] == MetricFailure("input queue_a failed: no data", backend=True)
    assert notes == (
        "Composite metric composite-metric = (queue_a + queue_b) / 2 with queue_a = FAILED, queue_b = 10 → FAILED: "
        "input queue_a failed: no data.",
    )
    assert composite_value(SPEC, observation(*readings)) is None


def test_a_division_by_zero_fails_the_composite() -> None:
    spec = parse_target_spec(target_spec({"formula": "queue_a / queue_b", "target": {"type": "Value", "value": "1"}}))
    readings = (ExternalReading((5_000,), 0.0), ResourceReading({}), ExternalReading((), 0.0))
    _, seen, _ = apply_composite(spec, observation(*readings))
    assert seen.readings[0] == MetricFailure("the formula gave +Inf (division by zero?)")


def test_a_spec_without_composite_is_left_as_it_is() -> None:
    plain = parse_target_spec(
        {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 3, "metrics": [external("queue_a")]}
    )
    seen_obs = observation(ExternalReading((1,), 0.0))
    assert apply_composite(plain, seen_obs) == (plain, seen_obs, ())
    assert composite_value(plain, seen_obs) is None


def run_sync(spec: TargetSpec, *readings: MetricReading, replicas: int = 2) -> Any:
    return sync(spec, SyncInputs(observation(*readings, replicas=replicas)), SyncState(), ControllerSettings(), 100.0)


def only_queues(formula: str, target: dict[str, str]) -> TargetSpec:
    return parse_target_spec(
        target_spec({"formula": formula, "target": target}, external("queue_a"), external("queue_b"))
    )


def test_a_sync_scales_on_the_composite_with_value_or_average_value() -> None:
    average = only_queues("max(queue_a, queue_b)", {"type": "AverageValue", "averageValue": "10"})
    outcome = run_sync(average, ExternalReading((40_000,), 0.0), ExternalReading((25_000,), 0.0))
    assert outcome.decision.desired_replicas == 4  # 40 ÷ 10 per replica
    assert [m.spec.name for m in outcome.decision.metrics] == ["composite-metric"]
    value = only_queues("max(queue_a, queue_b)", {"type": "Value", "value": "10"})
    outcome = run_sync(value, ExternalReading((40_000,), 0.0), ExternalReading((25_000,), 0.0))
    assert outcome.decision.desired_replicas == 8  # ratio 40 / 10 = 4 × 2 current replicas
    explanation = outcome.explanation()
    assert (
        explanation[1]
        == "Composite metric composite-metric = max(queue_a, queue_b) with queue_a = 40, queue_b = 25 → 40."
    )
    assert explanation[2].startswith("external metric composite-metric: value 40 against value 10")


def test_a_failed_input_never_scales_down() -> None:
    spec = only_queues("queue_a + queue_b", {"type": "AverageValue", "averageValue": "10"})
    outcome = run_sync(spec, MetricFailure("timeout"), ExternalReading((0,), 0.0), replicas=5)
    assert outcome.decision.replicas == 5
    assert not outcome.decision.scale
    assert "input queue_a failed: timeout" in (outcome.decision.error or "")


def test_a_formula_is_bounded_in_length_and_depth() -> None:
    assert problem_of("trig_one + " * 400 + "1") == "the formula is 4401 characters long: at most 4096"
    assert problem_of("(" * 40 + "trig_one" + ")" * 40).startswith(
        "the formula is nested too deeply: its parse tree is 411 levels deep, at most 400"
    )
    deep_but_allowed = "(" * 35 + " + ".join(["trig_one"] * 3) + ")" * 35
    assert value_of(deep_but_allowed, trig_one=1) == 3
