"""A paused target in a scenario: a step's ``annotations`` (the target's annotations from that step on, as
``kubectl annotate`` leaves them; the engine reads the pause annotations among them: autoscaler.core.pause_spec),
and ``status.pause``, the pause a target is in before the first step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.pause_state import PauseMode, PauseState
from autoscaler.simulate.history_status import scenario_time
from autoscaler.values.fields import ErrorList, Obj, type_name

ANNOTATIONS_STEP_KEY = "annotations"


def read_step_annotations(element: object, path: str, errors: ErrorList) -> dict[str, str] | None:
    """The step's annotations, strings by name (``{}``: none from this step on); None when the step has none
    (the previous step's stay)."""
    if not isinstance(element, Mapping) or element.get(ANNOTATIONS_STEP_KEY) is None:
        return None
    section = Obj.of(element[ANNOTATIONS_STEP_KEY], f"{path}.{ANNOTATIONS_STEP_KEY}", errors)
    if section is None:
        return None
    result: dict[str, str] = {}
    for name, value in section.value.items():
        if isinstance(value, str):
            result[str(name)] = value
        else:
            section.error(str(name), f"must be a string, not {type_name(value)}")
    return result


PAUSE_STATUS_KEY = "pause"  # the scenario status' pause (status.pause in the scenario's numbers)


def read_status_pause(status: Obj | None) -> PauseState | None:
    """``status.pause`` before the first step (a recording that starts while the target is paused): ``mode``,
    ``since`` (seconds, as the scenario's other times), and for the ``replicas`` mode ``replicas`` and
    ``reached``. Read before the rest of the status, which refuses the keys it does not read."""
    section = status.obj(PAUSE_STATUS_KEY) if status is not None else None
    if section is None:
        return None
    mode = section.string("mode", required=True, choices=[m.value for m in PauseMode])
    since = scenario_time(section, "since", required=True)
    replicas = section.integer("replicas", required=mode == PauseMode.REPLICAS.value, minimum=0, maximum=MAX_INT32)
    reached = section.boolean("reached", default=False)
    section.finish()
    if mode is None or since is None or (mode == PauseMode.REPLICAS.value and replicas is None):
        return None
    return PauseState(PauseMode(mode), replicas if mode == PauseMode.REPLICAS.value else None, since, bool(reached))


def pause_json(state: PauseState) -> dict[str, Any]:
    """A pause state in :func:`read_status_pause`'s shape (a recording's state)."""
    document: dict[str, Any] = {"mode": state.mode.value, "since": state.since}
    if state.replicas is not None:
        document["replicas"] = state.replicas
        document["reached"] = state.reached
    return document
