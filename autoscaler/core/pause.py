"""A target's pause (issue 36, KEDA's ``paused``, ``paused-replicas``, ``paused-scale-in``, ``paused-scale-out``).

Pure. What is asked (``spec.pause`` and the ``autoscaler.dev/paused*`` annotations,
:mod:`autoscaler.core.pause_spec`) becomes one effective :class:`Pause` (:func:`effective_pause`), which a
sync applies to the decision it made (:func:`apply_pause`, the last step of
:func:`~autoscaler.core.sync.plan_sync`):

- ``replicas`` (paused-replicas N): the target is scaled to N once, through the ordinary scale write (recorded
  before it is sent, so a crash in between is settled as any write is), then held: no decision writes a scale.
- ``paused`` (both directions): held at the current count.
- ``scaleIn`` / ``scaleOut``: a decision that scales down (up) is held; the other direction goes on.

A held decision is still made and explained: its proposal, history and conditions are the decision's, and
``explain`` says what it would have set and why it did not. The pause is visible as the ``Paused`` condition
(True while paused, its message saying what and since when; False once resumed), ``status.pause`` and an Event
when it begins, changes or ends. When it began is state (:class:`PauseState`, kept in the status), so that
"since" stays true across restarts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from autoscaler.core import conditions as c
from autoscaler.core.conditions import find_condition, set_condition
from autoscaler.core.decision import NORMAL, WARNING, Decision, Event
from autoscaler.core.pause_spec import (
    PAUSED_ANNOTATION,
    PAUSED_REPLICAS_ANNOTATION,
    PAUSED_SCALE_IN_ANNOTATION,
    PAUSED_SCALE_OUT_ANNOTATION,
    PauseAnnotations,
    PauseSpec,
    read_pause_annotations,
)
from autoscaler.core.pause_state import PauseMode, PauseState, pause_document
from autoscaler.values.timestamps import rfc3339

PAUSED = "Paused"  # the condition's type (KEDA's ScaledObject has the same)
REASON_PAUSED = "ScalingTargetPaused"  # paused, or paused at a count
REASON_PAUSED_SCALE_IN = "PausedScaleIn"
REASON_PAUSED_SCALE_OUT = "PausedScaleOut"
REASON_RESUMED = "ScalingTargetResumed"
REASON_INVALID = "InvalidPauseAnnotation"  # the Warning Event's reason, and the condition's when nothing pauses


@dataclass(frozen=True, slots=True)
class Pause:
    """The effective pause: its mode, its count (``replicas`` mode only) and what asks for it (``by``: the
    annotation or spec field, as the condition names it)."""

    mode: PauseMode
    replicas: int | None
    by: str


def effective_pause(spec: PauseSpec | None, annotations: PauseAnnotations) -> Pause | None:
    """The pause ``spec`` (``spec.pause``) and ``annotations`` ask for together, or None: not paused.

    An annotation wins over the spec where both say something: ``paused-replicas`` over ``spec.pause.replicas``,
    ``paused-scale-in``/``-out`` over ``scaleIn``/``scaleOut``, and ``paused`` over all of the spec (``"false"``
    lifts the spec's pause). As in KEDA, ``paused-replicas`` wins over every other annotation, and
    ``paused: "true"`` holds both directions whatever ``paused-scale-in``/``-out`` say.
    """
    if annotations.replicas is not None:
        return Pause(PauseMode.REPLICAS, annotations.replicas, f"annotation {PAUSED_REPLICAS_ANNOTATION}")
    if annotations.paused is True:
        return Pause(PauseMode.PAUSED, None, f"annotation {PAUSED_ANNOTATION}")
    own = spec if spec is not None and annotations.paused is None else PauseSpec()
    if own.replicas is not None:
        return Pause(PauseMode.REPLICAS, own.replicas, "spec.pause.replicas")
    scale_in, in_by = (
        (annotations.scale_in, f"annotation {PAUSED_SCALE_IN_ANNOTATION}")
        if annotations.scale_in is not None
        else (own.scale_in, "spec.pause.scaleIn")
    )
    scale_out, out_by = (
        (annotations.scale_out, f"annotation {PAUSED_SCALE_OUT_ANNOTATION}")
        if annotations.scale_out is not None
        else (own.scale_out, "spec.pause.scaleOut")
    )
    if scale_in and scale_out:
        return Pause(PauseMode.PAUSED, None, f"{in_by} and {out_by}")
    if scale_in:
        return Pause(PauseMode.SCALE_IN, None, in_by)
    if scale_out:
        return Pause(PauseMode.SCALE_OUT, None, out_by)
    return None


def pause_message(pause: Pause, since: float) -> str:
    """The Paused condition's message: what is paused, since when, and who asked (steady while it lasts)."""
    when = rfc3339(since)
    if pause.mode is PauseMode.REPLICAS:
        return f"paused at {pause.replicas} replicas since {when} ({pause.by}): scaled to it once, then held"
    if pause.mode is PauseMode.PAUSED:
        return f"paused since {when} ({pause.by}): held at the current count"
    direction = "scale-in" if pause.mode is PauseMode.SCALE_IN else "scale-out"
    return f"paused {direction} since {when} ({pause.by}): the target is not scaled {_DIRECTION[pause.mode]}"


_DIRECTION = {PauseMode.SCALE_IN: "down", PauseMode.SCALE_OUT: "up"}
_REASONS = {
    PauseMode.PAUSED: REASON_PAUSED,
    PauseMode.REPLICAS: REASON_PAUSED,
    PauseMode.SCALE_IN: REASON_PAUSED_SCALE_IN,
    PauseMode.SCALE_OUT: REASON_PAUSED_SCALE_OUT,
}


def pause_step(
    spec: PauseSpec | None,
    annotations: tuple[tuple[str, str], ...],
    decision: Decision,
    previous: PauseState | None,
    now: float,
) -> Decision:
    """The pause step of a sync (:func:`~autoscaler.core.sync.plan_sync`): the pause ``spec.pause`` and the
    target's pause annotations (:func:`~autoscaler.core.pause_spec.pause_annotation_items`) ask for, applied to
    ``decision``; ``previous``, the pause state the sync started from."""
    if spec is None and not annotations and previous is None and find_condition(decision.conditions, PAUSED) is None:
        return decision  # the common case, every sync of a target never paused: nothing to read
    read = read_pause_annotations(annotations)
    return apply_pause(decision, effective_pause(spec, read), read, previous, now)


def apply_pause(
    decision: Decision,
    pause: Pause | None,
    annotations: PauseAnnotations,
    previous: PauseState | None,
    now: float,
) -> Decision:
    """``decision`` as the pause leaves it (see the module docstring), with the Paused condition, the Events
    and the pause state the next sync starts from (``Decision.pause``).

    ``previous``: the pause state the sync started from. A target that is not paused, never was and has no
    invalid pause annotation is left exactly as it was (no condition added)."""
    before = find_condition(decision.conditions, PAUSED)
    problems = annotations.problems
    if pause is None:
        if previous is None and before is None and not problems:
            return decision
        if problems:
            text = "; ".join(problems)
            decision = _with_paused(decision, c.FALSE, REASON_INVALID, f"not paused: {text} (ignored)", now)
            return replace(_warned(decision, before, text), pause=None)
        if previous is not None or (before is not None and before.status == c.TRUE):
            began = f" that began at {rfc3339(previous.since)}" if previous is not None else ""
            message = f"resumed: the pause{began} ended"
            decision = _with_paused(decision, c.FALSE, REASON_RESUMED, message, now)
            decision = replace(decision, events=(*decision.events, Event(NORMAL, REASON_RESUMED, message)))
        elif before is not None and before.reason == REASON_INVALID:  # the annotation was corrected or removed
            decision = _with_paused(decision, c.FALSE, REASON_RESUMED, "not paused", now)
        return replace(decision, pause=None)
    since = previous.since if previous is not None else now
    same = previous is not None and (previous.mode, previous.replicas) == (pause.mode, pause.replicas)
    state = PauseState(pause.mode, pause.replicas, since, previous.reached if same and previous is not None else False)
    message = pause_message(pause, since)
    if problems:
        message += f"; ignored: {'; '.join(problems)}"
    decision = _with_paused(decision, c.TRUE, _REASONS[pause.mode], message, now)
    if not same:
        decision = replace(decision, events=(*decision.events, Event(NORMAL, REASON_PAUSED, message)))
    if problems:
        decision = _warned(decision, before, "; ".join(problems))
    current = decision.current_replicas
    if pause.mode is PauseMode.REPLICAS and not state.reached:
        if current == pause.replicas:
            state = replace(state, reached=True)
        else:
            assert pause.replicas is not None
            return replace(_scaled_to(decision, pause.replicas, pause.by), pause=state)
    holds = (
        pause.mode in (PauseMode.PAUSED, PauseMode.REPLICAS)
        or (pause.mode is PauseMode.SCALE_IN and decision.replicas < current)
        or (pause.mode is PauseMode.SCALE_OUT and decision.replicas > current)
    )
    if not holds or not decision.scale:
        return replace(decision, pause=state)
    return replace(
        decision,
        replicas=current,
        scale=False,
        status_desired_replicas=current,
        held_replicas=decision.replicas,
        pause=state,
    )


def settle_pause(decision: Decision, now: float) -> Decision:
    """After the writes (:func:`~autoscaler.core.sync.settle`): a ``replicas`` pause whose count was written
    has reached it, and is only held from the next sync on. A pause at 0 is this autoscaler's zero
    (ScaledToZero True), so that once resumed the target leaves it as it leaves any zero of its own."""
    state = decision.pause
    if state is None or state.mode is not PauseMode.REPLICAS or state.reached:
        return decision
    if decision.applied is not True or decision.replicas != state.replicas:
        return decision
    conditions = decision.conditions
    if decision.replicas == 0:
        conditions = set_condition(conditions, c.SCALED_TO_ZERO, c.TRUE, "ScaledToZero", c.MSG_SCALED_TO_ZERO, now)
    return replace(decision, conditions=conditions, pause=replace(state, reached=True))


def held_text(decision: Decision) -> str | None:
    """What a pause held of ``decision``, for ``explain``; None when it held nothing."""
    if decision.held_replicas is None:
        return None
    paused = find_condition(decision.conditions, PAUSED)
    why = paused.message if paused is not None and paused.status == c.TRUE else "paused"
    return f"Would scale {decision.current_replicas} → {decision.held_replicas}; held: {why}."


def _with_paused(decision: Decision, status: str, reason: str, message: str, now: float) -> Decision:
    return replace(decision, conditions=set_condition(decision.conditions, PAUSED, status, reason, message, now))


def _warned(decision: Decision, before: c.Condition | None, problems: str) -> Decision:
    """A Warning Event for invalid annotations, once: when the condition did not already say so."""
    if before is not None and problems in before.message:
        return decision
    return replace(decision, events=(*decision.events, Event(WARNING, REASON_INVALID, problems)))


def _scaled_to(decision: Decision, replicas: int, by: str) -> Decision:
    """The decision to write the paused count (whatever the decision itself would have set)."""
    return replace(
        decision,
        replicas=replicas,
        scale=True,
        rescale_reason=f"paused at {replicas} replicas ({by})",
        status_desired_replicas=replicas,
    )


def pause_status(decision: Decision) -> dict[str, Any]:
    """The status section of the pause ``decision`` leaves (``status.pause``); none while not paused."""
    return {} if decision.pause is None else {"pause": pause_document(decision.pause)}


def pause_summary(decision: Decision) -> str | None:
    """A short "why" for a decision a pause changed (``simulate``'s table), or None: it changed nothing."""
    state = decision.pause
    if state is None:
        return None
    if decision.held_replicas is not None:
        return f"held by the pause ({state.mode.value}): would be {decision.held_replicas}"
    if decision.scale and state.mode is PauseMode.REPLICAS:
        return decision.rescale_reason  # the paused count, written
    return None
