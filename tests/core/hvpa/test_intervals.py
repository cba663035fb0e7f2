"""Effective intervals (steps 1–2) and the total → replicas mapping (step 4), against the document's tables.

Tables are HVPA-EP-0001's; where the document's arithmetic is wrong, the test says so and pins the
corrected value (hvpa-semantics.md, "Checking the document's own numbers").
"""

from fractions import Fraction

from autoscaler.core.hvpa.intervals import (
    EffectiveInterval,
    IntervalProblem,
    desired_for_total,
    effective_intervals,
    natural_replicas,
)
from autoscaler.core.hvpa.spec import DEFAULT_POLICY, ContainerPolicy
from tests.core.hvpa.builders import GI, q, target_spec


def listed(*entries: str, more: str = "") -> str:
    """An hvpa section body listing ``entries`` as scalingIntervals."""
    return "  scalingIntervals:\n" + "".join(f"  - {e}\n" for e in entries) + more


def intervals_of(
    hvpa: str = "",
    resource: str = "cpu",
    policy: ContainerPolicy = DEFAULT_POLICY,
    *,
    min_replicas: int = 1,
    max_replicas: int = 5,
) -> tuple[EffectiveInterval, ...]:
    spec = target_spec(hvpa, min_replicas=min_replicas, max_replicas=max_replicas)
    assert spec.hvpa is not None
    result = effective_intervals(spec.hvpa, resource, policy, min_replicas, max_replicas)
    assert not isinstance(result, IntervalProblem), result
    return result


def test_main_example_max_totals() -> None:
    # Replicas | max per pod | max total: 1 0.5/2, 2 1/4, 3 2/8, 4 4/16, 5 8/32 → 0.5/2, 2/8, 6/24, 16/64, 40/160.
    cpu = intervals_of()
    memory = intervals_of(resource="memory")
    assert [i.replicas for i in cpu] == [1, 2, 3, 4, 5]
    assert [i.max_total for i in cpu] == [q("500m"), 2, 6, 16, 40]
    assert [i.max_total / GI for i in memory] == [2, 8, 24, 64, 160]


def test_overlap_30_percent_table_with_the_corrected_cell() -> None:
    # "Scale down max" columns are minimum thresholds. r ≥ 2: MAX(r−1) × 0.7. The document prints 0.765 Gi per pod
    # at r = 2; 1.4 Gi / 2 = 0.7 Gi (the spreadsheet cell overlap!H12 says 0.7 too). Row 1 comes from minAllowed.
    policy = ContainerPolicy("main", min_allowed={"cpu": _qty("125m"), "memory": _qty("512Mi")})
    overlap = "  scalingIntervalsOverlap: {cpu: {percentage: 30}, memory: {percentage: 30}}\n"
    cpu = intervals_of(overlap, "cpu", policy)
    memory = intervals_of(overlap, "memory", policy)
    assert [i.min_total for i in cpu] == [q("125m"), q("350m"), q("1.4"), q("4.2"), q("11.2")]
    assert [i.min_total / GI for i in memory] == [Fraction(1, 2), q("1.4"), q("5.6"), q("16.8"), q("44.8")]
    per_pod_cpu = [round(float(i.min_total / i.replicas), 3) for i in cpu]
    per_pod_memory = [round(float(i.min_total / i.replicas / GI), 3) for i in memory]
    assert per_pod_cpu == [0.125, 0.175, 0.467, 1.05, 2.24]
    assert per_pod_memory == [0.5, 0.7, 1.867, 4.2, 8.96]  # not 0.765 at r = 2
    assert [i.max_total for i in cpu] == [q("500m"), 2, 6, 16, 40]  # scaling up ignores the overlap


def test_design_section_overlap_takes_the_larger_of_value_and_percentage() -> None:
    # The design yaml adds value 250m / 1.5Gi to 30 %: at r = 2 the thresholds become 0.25 vCPU and 0.5 Gi,
    # not the table's 0.35 / 1.4 (EI-03): the absolute values are larger than 30 % of 0.5 / 2Gi.
    overlap = (
        "  scalingIntervalsOverlap: {cpu: {value: 250m, percentage: 30}, memory: {value: 1.5Gi, percentage: 30}}\n"
    )
    cpu = intervals_of(overlap)
    memory = intervals_of(overlap, "memory")
    assert cpu[1].min_total == q("250m") and memory[1].min_total == GI / 2
    assert cpu[4].min_total == q("11.2")  # 30 % of 16 = 4.8 > 250m
    assert intervals_of("  scalingIntervalsOverlap: {cpu: {value: 5}}\n")[1].min_total == 0  # floored at 0 (A5)


def test_linear_extrapolation_splits_the_total_range_evenly() -> None:
    # "Scaling only horizontally": one interval of 5 replicas at 0.5 per pod: 0.5, 1, 1.5, 2, 2.5 (A3).
    one = intervals_of("  scalingIntervals:\n  - {maxReplicas: 5, maxResources: {cpu: 500m, memory: 2Gi}}\n")
    assert [i.max_total for i in one] == [q("0.5"), 1, q("1.5"), 2, q("2.5")]
    # From the previous MAX (2 at r = 2) to 5 × 2 = 10 over r = 3..5: steps of 8/3 (in total space, not per pod).
    two = intervals_of(
        "  scalingIntervals:\n  - {maxReplicas: 2, maxResources: {cpu: 1, memory: 1Gi}}\n"
        "  - {maxReplicas: 5, maxResources: {cpu: 2, memory: 2Gi}}\n"
    )
    assert [i.max_total for i in two] == [1, 2, 2 + Fraction(8, 3), 2 + Fraction(16, 3), 10]
    assert [i.index for i in two] == [0, 0, 1, 1, 1]


def test_scaling_only_vertically_with_the_corrected_totals() -> None:
    # One interval at 2 replicas, 4 vCPU / 16 Gi per pod. The document prints totals 16 / 64; 2 × 4 = 8 and
    # 2 × 16 = 32 (EI-05).
    spec = "  scalingIntervals:\n  - {maxReplicas: 2, maxResources: {cpu: 4, memory: 16Gi}}\n"
    assert [(i.replicas, i.max_total) for i in intervals_of(spec, min_replicas=2, max_replicas=2)] == [(2, 8)]
    assert intervals_of(spec, "memory", min_replicas=2, max_replicas=2)[0].max_total == 32 * GI


def test_horizontal_only_keeps_the_pod_size() -> None:
    spec = listed(
        "{maxReplicas: 1, maxResources: {cpu: 1, memory: 1Gi}}",
        "{maxReplicas: 4, maxResources: {cpu: 2, memory: 2Gi}, effectiveIntervalExtrapolation: horizontalOnly}",
    )
    result = intervals_of(spec)
    assert [i.max_total for i in result] == [1, 4, 6, 8]
    assert [i.horizontal_only for i in result] == [False, True, True, True]
    assert all(i.per_pod_max == 2 for i in result[1:])


def test_intervals_start_at_min_replicas_and_stop_at_max_replicas() -> None:
    # A2: the first interval starts at minReplicas; A25: counts above maxReplicas are dropped.
    spec = listed(
        "{maxReplicas: 4, maxResources: {cpu: 1, memory: 1Gi}}", "{maxReplicas: 8, maxResources: {cpu: 2, memory: 2Gi}}"
    )
    result = intervals_of(spec, min_replicas=2, max_replicas=6)
    assert [i.replicas for i in result] == [2, 3, 4, 5, 6]
    assert [i.max_total for i in result] == [q("4") / 3, q("8") / 3, 4, 4 + 3, 4 + 6]


def test_max_resources_default_to_the_containers_max_allowed() -> None:
    # A24: per container.
    policy = ContainerPolicy("main", max_allowed={"cpu": _qty("3")})
    spec = listed(
        "{maxReplicas: 1, maxResources: {cpu: 1, memory: 1Gi}}",
        "{maxReplicas: 2, maxResources: {memory: 2Gi}}",
        more="  containers: [{name: main, maxAllowed: {cpu: 3}}]\n",
    )
    assert [i.max_total for i in intervals_of(spec, policy=policy)] == [1, 6]


def test_lowest_minimum_is_min_allowed_times_replicas() -> None:
    policy = ContainerPolicy("main", min_allowed={"cpu": _qty("100m")})
    spec = "  scalingIntervals:\n  - {maxReplicas: 3, maxResources: {cpu: 1, memory: 1Gi}}\n"
    assert intervals_of(spec, policy=policy, min_replicas=2)[0].min_total == q("200m")  # A4
    assert intervals_of(spec, min_replicas=2)[0].min_total == 0


# --- the mapping (step 4) -------------------------------------------------------------------------------------


def mapping(overlap: str = "") -> tuple[EffectiveInterval, ...]:
    return intervals_of(f"  scalingIntervalsOverlap: {{cpu: {{percentage: {overlap}}}}}\n" if overlap else "")


def test_natural_mapping_is_the_smallest_count_that_holds_the_total() -> None:
    cpu = mapping()
    assert [natural_replicas(cpu, q(t)) for t in ("0", "0.5", "0.501", "2", "4", "6", "16.1", "40", "41")] == [
        1,
        1,
        2,
        2,
        3,
        3,
        5,
        5,
        5,
    ]  # beyond the last interval: the last count (A9)


def test_the_document_conflict_example() -> None:
    # "Multiple resources": CPU total 4 → 3 replicas, memory total 26 Gi → 4 replicas.
    assert natural_replicas(mapping(), q("4")) == 3
    assert natural_replicas(intervals_of(resource="memory"), q("26Gi")) == 4


def test_boundaries_are_inclusive_where_the_count_is() -> None:
    # A6: T == MAX(r) belongs to r; while at c, T == MIN(c) stays at c.
    with_overlap = mapping("30")
    assert desired_for_total(with_overlap, 4, q("16")) == 4
    assert desired_for_total(with_overlap, 4, q("16.001")) == 5
    assert desired_for_total(with_overlap, 4, q("4.2")) == 4
    assert desired_for_total(with_overlap, 4, q("4.199")) == 3
    no_overlap = mapping()
    assert desired_for_total(no_overlap, 3, q("2")) == 3 and desired_for_total(no_overlap, 3, q("1.999")) == 2


def test_scaling_up_ignores_the_overlap() -> None:
    assert desired_for_total(mapping("30"), 2, q("2.001")) == 3
    assert desired_for_total(mapping("30"), 2, q("17")) == 5


def test_a_sudden_drop_lands_where_a_gradual_fall_would_stop() -> None:
    # A7: the largest r < c whose MIN holds T. With 30 %: MIN = 0, 0.35, 1.4, 4.2, 11.2.
    cpu = mapping("30")
    assert desired_for_total(cpu, 5, q("5")) == 4  # 4.2 ≤ 5 < 11.2
    assert desired_for_total(cpu, 5, q("1.4")) == 3  # not 2, although 1.4 ≤ MAX(2)
    assert desired_for_total(cpu, 5, q("0.3")) == 1
    gradual = 5
    for total in ("10", "8", "5", "3", "1.4"):
        gradual = desired_for_total(cpu, gradual, q(total))
    assert gradual == 3


def test_a_count_outside_the_intervals_maps_plainly() -> None:
    # A8: manual scaling to 7 (above the last interval), or below the first: N(T), no hysteresis.
    spec = listed(
        "{maxReplicas: 3, maxResources: {cpu: 1, memory: 1Gi}}", "{maxReplicas: 5, maxResources: {cpu: 2, memory: 2Gi}}"
    )
    cpu = intervals_of(spec, min_replicas=2, max_replicas=9)
    assert [i.replicas for i in cpu] == [2, 3, 4, 5]
    assert desired_for_total(cpu, 7, q("2.5")) == 3  # no hysteresis from 7: MAX(3) = 3 holds 2.5
    assert desired_for_total(cpu, 1, q("2.5")) == 3


def test_a_problem_names_the_field() -> None:
    spec = target_spec()
    assert spec.hvpa is not None
    problem = effective_intervals(spec.hvpa, "cpu", ContainerPolicy("x"), 1, 5)
    assert not isinstance(problem, IntervalProblem)
    bare = target_spec(
        listed(
            "{maxReplicas: 2, maxResources: {cpu: 1}}", more="  containers: [{name: main, maxAllowed: {memory: 1Gi}}]\n"
        )
    )
    assert bare.hvpa is not None
    missing = effective_intervals(bare.hvpa, "memory", ContainerPolicy("other"), 1, 5)
    assert isinstance(missing, IntervalProblem)
    assert (missing.index, missing.field) == (0, "maxResources.memory") and "A24" in missing.message


def _qty(text: str):  # type: ignore[no-untyped-def]
    from autoscaler.values.quantity import Quantity

    return Quantity.parse(text)
