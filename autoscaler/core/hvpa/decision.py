"""One HVPA decision: the replica count and the per-pod resources, and what to write for them (steps 3–8).

:func:`decide_hvpa` is pure: the spec, what was observed (replicas, pods, the VPA), the HPA engine's
decision for this sync (the HPA source's proposal), the state HVPA carries between syncs, and "now".
It returns an :class:`HvpaDecision`: the replicas to set through the scale subresource, the VPA
merge patch that pins each controlled container (minAllowed = maxAllowed = the per-pod request), or
the reason nothing is applied, plus the new state to persist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from autoscaler.core.decision import Decision
from autoscaler.core.hvpa.current import container_names, current_resource, held_pin
from autoscaler.core.hvpa.gates import BlockReason, Direction, PairChange, check_gates, direction
from autoscaler.core.hvpa.intervals import (
    EffectiveInterval,
    IntervalProblem,
    desired_for_total,
    effective_intervals,
    interval_at,
)
from autoscaler.core.hvpa.recommend import Pair, PairTotals, Sources, available_sources, clamp_to_policy, pair_totals
from autoscaler.core.hvpa.recommendation_window import Recommendation, recorded, stabilize, window_max
from autoscaler.core.hvpa.resources import Sizing, new_limit, proposed_value, round_request, round_up, size_pair
from autoscaler.core.hvpa.spec import ContainerMode, ControlledValues, HvpaSpec
from autoscaler.core.hvpa.vpa import VpaStatus
from autoscaler.core.hvpa.vpa_patch import Pins, merge_patch
from autoscaler.core.observation import ContainerInfo, PodInfo
from autoscaler.core.spec import TargetSpec


@dataclass(frozen=True, slots=True)
class VpaObservation:
    """The VPA as read this sync. ``container_policies`` None: its spec was not read (the simulator),
    in which case the pins are assumed to stand at the pods' current requests."""

    status: VpaStatus | None = None
    container_policies: tuple[Mapping[str, Any], ...] | None = None
    resource_version: str | None = None


@dataclass(frozen=True, slots=True)
class HvpaObservation:
    replicas: int  # the scale's spec.replicas
    pods: Sequence[PodInfo] = ()
    vpa: VpaObservation | None = None
    template: Sequence[ContainerInfo] = ()  # the workload's pod template containers
    clock: Fraction | float | None = None  # Unix seconds (UTC) for the maintenance window


@dataclass(frozen=True, slots=True)
class HvpaState:
    """What HVPA carries from one sync to the next (the service persists it in the target's status)."""

    last_applied: float | None = None  # when HVPA last applied a scaling (A27)
    pins: Pins = field(default_factory=dict)  # what it last pinned on the VPA (A21)
    history: tuple[Recommendation, ...] = ()  # the recent per-pod proposals, for stabilizationMode WindowMax


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """The working for one (container, resource) pair."""

    pair: Pair
    totals: PairTotals
    intervals: tuple[EffectiveInterval, ...]
    desired: int | None  # this pair's count (step 4); None without a recommendation
    sizing: Sizing | None  # None without a recommendation: the pair is left as it is
    request: Fraction  # the per-pod request proposed (rounded)
    limit: Fraction | None  # the per-pod limit that goes with it (rounded); None: no limit
    stabilized: str | None = None  # why the request is not the proposal: a WindowMax window held it


@dataclass(frozen=True, slots=True)
class HvpaDecision:
    current_replicas: int
    desired_replicas: int  # HVPA's count after hysteresis, clamping and postponement
    replicas: int  # the scale's spec.replicas after this decision
    scale: bool  # whether to write the scale subresource
    desired_by_pair: Mapping[str, int]  # "container/resource" → that pair's count (step 4)
    scale_in_postponed: bool  # the scale-in was held (A14)
    direction: Direction | None  # None: nothing to change
    blocked: BlockReason | None  # why the action is not applied
    block_detail: str
    requests: Mapping[str, Mapping[str, Fraction]]  # proposed per-pod requests, per container
    limits: Mapping[str, Mapping[str, Fraction]]  # the limits that go with them
    vpa_patch: Mapping[str, Any] | None  # JSON merge patch for the VPA, None: nothing to write
    pairs: tuple[PairOutcome, ...]
    sources: Sources | None
    inactive: str | None  # why HVPA made no proposal at all
    state: HvpaState

    @property
    def applied(self) -> bool:
        return self.inactive is None and self.direction is not None and self.blocked is None


def decide_hvpa(
    spec: TargetSpec, observation: HvpaObservation, hpa: Decision | None, state: HvpaState, now: float
) -> HvpaDecision:
    """Compute one HVPA decision. Pure: same inputs, same decision."""
    hvpa = spec.hvpa
    if hvpa is None:
        raise ValueError("decide_hvpa needs a target spec with an hvpa section")
    current = observation.replicas
    vpa = observation.vpa or VpaObservation()
    sources = available_sources(hvpa, hpa, vpa.status)
    pairs: list[PairOutcome] = []
    problem: str | None = None
    for name in container_names(observation.pods, observation.template):
        policy = hvpa.policy_for(name)
        if policy.mode is ContainerMode.OFF:
            continue  # A11: never part of the decision, never modified
        recommendation = sources.vpa.for_container(name) if sources.vpa is not None else None
        for resource in policy.controlled_resources:
            pair = Pair(name, resource)
            now_has = current_resource(
                name,
                resource,
                observation.pods,
                observation.template,
                vpa.container_policies,
                state.pins.get(name, {}).get(resource),
            )
            totals = pair_totals(pair, policy, now_has, current, sources, recommendation)
            intervals = effective_intervals(hvpa, resource, policy, spec.min_replicas, spec.max_replicas)
            if isinstance(intervals, IntervalProblem):
                problem = problem or (
                    f"container {name!r}: hvpa.scalingIntervals[{intervals.index}]."
                    f"{intervals.field}: {intervals.message}"
                )
                intervals = ()
            pairs.append(
                PairOutcome(
                    pair=pair,
                    totals=totals,
                    intervals=intervals,
                    desired=None,
                    sizing=None,
                    request=now_has.request,
                    limit=now_has.limit,
                )
            )

    def inactive(why: str) -> HvpaDecision:
        return HvpaDecision(
            current_replicas=current,
            desired_replicas=current,
            replicas=current,
            scale=False,
            desired_by_pair={},
            scale_in_postponed=False,
            direction=None,
            blocked=None,
            block_detail="",
            requests=_per_container(pairs, True),
            limits=_per_container(pairs, False),
            vpa_patch=None,
            pairs=tuple(pairs),
            sources=sources,
            inactive=why,
            state=state,
        )

    if current == 0:
        return inactive("the target has 0 replicas: scaling is disabled (A8)")
    if problem is not None:
        return inactive(problem)
    if not pairs:
        return inactive("no container to size: no live pod and no pod template lists a controlled container")
    decided = [p for p in pairs if p.totals.total is not None]
    if not decided:
        notes = "; ".join(sources.unavailable) or "no source recommends anything for the controlled containers"
        return inactive(f"no recommendation: {notes}")
    return _decide(spec, hvpa, observation, vpa, sources, pairs, state, now)


def _decide(
    spec: TargetSpec,
    hvpa: HvpaSpec,
    observation: HvpaObservation,
    vpa: VpaObservation,
    sources: Sources,
    pairs: list[PairOutcome],
    state: HvpaState,
    now: float,
) -> HvpaDecision:
    current = observation.replicas
    desired_by_pair: dict[str, int] = {}
    for index, outcome in enumerate(pairs):
        total = outcome.totals.total
        if total is not None:
            pair_desired = desired_for_total(outcome.intervals, current, total)
            desired_by_pair[outcome.pair.label] = pair_desired
            pairs[index] = PairOutcome(
                pair=outcome.pair,
                totals=outcome.totals,
                intervals=outcome.intervals,
                desired=pair_desired,
                sizing=None,
                request=outcome.request,
                limit=outcome.limit,
            )
    proposal = min(max(max(desired_by_pair.values()), spec.min_replicas), spec.max_replicas)
    inside = interval_at(next(p.intervals for p in pairs if p.desired is not None), current) is not None
    postponed = inside and proposal < current and any(_would_grow(hvpa, p, current, proposal) for p in pairs)
    desired = current if postponed else proposal  # A14: hold the count while a pod would grow

    changes: list[PairChange] = []
    proposals: list[Recommendation] = []
    for index, outcome in enumerate(pairs):
        total = outcome.totals.total
        if total is None:
            continue
        pair, request = outcome.pair, outcome.totals.current.request
        policy = hvpa.policy_for(pair.container)
        sizing = size_pair(
            total,
            request,
            policy,
            pair.resource,
            current,
            desired,
            interval_at(outcome.intervals, desired),
            hvpa.base_resources_per_replica.get(pair.resource),
            held=postponed,
            max_rule=inside,
        )
        rounded = round_request(pair.resource, sizing.per_pod, policy)
        proposals.append(Recommendation(now, pair.container, pair.resource, desired, rounded))
        windowed = stabilize(hvpa, state.history, proposals[-1], request, now)
        rounded = windowed.request
        limit = new_limit(
            rounded,
            outcome.totals.current,
            desired,
            hvpa.limits_requests_gap_scale_params.get(pair.resource),
            policy.controlled_values,
        )
        if limit is not None and policy.controlled_values is ControlledValues.REQUESTS_ONLY:
            rounded = min(rounded, limit)  # the limit stays; Kubernetes needs request ≤ limit
        elif limit is not None:
            limit = max(round_up(pair.resource, limit), rounded)
        pairs[index] = PairOutcome(
            pair=pair,
            totals=outcome.totals,
            intervals=outcome.intervals,
            desired=outcome.desired,
            sizing=sizing,
            request=rounded,
            limit=limit,
            stabilized=windowed.reason,
        )
        changes.append(PairChange(pair.label, pair.resource, current * request, desired * rounded, total))

    way = direction(current, desired, changes)
    blocked: BlockReason | None = None
    detail = ""
    if way is None and postponed:
        blocked, detail = BlockReason.PARADOXICAL_SCALING, _held_text(hvpa, pairs, current, proposal)
    elif way is not None:
        key = "scaleUp" if way is Direction.UP else "scaleDown"
        scale_type = hvpa.scale_up if way is Direction.UP else hvpa.scale_down
        gate = check_gates(
            scale_type,
            f"hvpa.{key}",
            changes,
            now=now,
            last_applied=None if window_max(scale_type) else state.last_applied,  # the window replaces it
            clock=observation.clock,
            window=hvpa.maintenance_time_window,
        )
        blocked, detail = gate.reason, gate.detail
    applied = way is not None and blocked is None

    pins: dict[str, dict[str, Fraction]] = {}
    for outcome in pairs:
        if outcome.sizing is not None:
            value = outcome.request if applied else outcome.totals.current.request
            pins.setdefault(outcome.pair.container, {})[outcome.pair.resource] = value
    if vpa.container_policies is not None:
        needs_patch = any(
            not held_pin(vpa.container_policies, container, resource, value)
            for container, amounts in pins.items()
            for resource, value in amounts.items()
        )
    else:
        needs_patch = applied and any(o.sizing is not None and o.request != o.totals.current.request for o in pairs)
    patch = merge_patch(hvpa, pins, vpa.container_policies, vpa.resource_version) if needs_patch else None
    new_state = HvpaState(
        now if applied else state.last_applied,
        _merged(state.pins, pins) if patch is not None else state.pins,
        recorded(hvpa, state.history, proposals, now),
    )
    replicas = desired if applied else current
    return HvpaDecision(
        current_replicas=current,
        desired_replicas=desired,
        replicas=replicas,
        scale=replicas != current,
        desired_by_pair=desired_by_pair,
        scale_in_postponed=postponed,
        direction=way,
        blocked=blocked,
        block_detail=detail,
        requests=_per_container(pairs, True),
        limits=_per_container(pairs, False),
        vpa_patch=patch,
        pairs=tuple(pairs),
        sources=sources,
        inactive=None,
        state=new_state,
    )


def _would_grow(hvpa: HvpaSpec, outcome: PairOutcome, current: int, proposal: int) -> bool:
    """Whether scaling in to ``proposal`` would give this pair's pods more than they have now (A14)."""
    total = outcome.totals.total
    if total is None:
        return False
    request = outcome.totals.current.request
    value, _ = proposed_value(
        interval_at(outcome.intervals, proposal),
        total,
        request,
        current,
        proposal,
        hvpa.base_resources_per_replica.get(outcome.pair.resource),
    )
    return clamp_to_policy(value, hvpa.policy_for(outcome.pair.container), outcome.pair.resource) > request


def _held_text(hvpa: HvpaSpec, pairs: Sequence[PairOutcome], current: int, proposal: int) -> str:
    growing = [p.pair.label for p in pairs if _would_grow(hvpa, p, current, proposal)]
    return (
        f"scaling in to {proposal} would grow the pods of {', '.join(growing)}; "
        f"{current} replicas are kept until they need no more than they have (A14)"
    )


def _merged(old: Pins, new: Pins) -> dict[str, dict[str, Fraction]]:
    """The pins in force after a patch: the new ones over those it left in place."""
    result = {container: dict(amounts) for container, amounts in old.items()}
    for container, amounts in new.items():
        result.setdefault(container, {}).update(amounts)
    return result


def _per_container(pairs: Sequence[PairOutcome], requests: bool) -> dict[str, dict[str, Fraction]]:
    result: dict[str, dict[str, Fraction]] = {}
    for outcome in pairs:
        amounts = result.setdefault(outcome.pair.container, {})
        value = outcome.request if requests else outcome.limit
        if value is not None:
            amounts[outcome.pair.resource] = value
    return result
