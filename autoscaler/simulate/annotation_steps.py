"""A scenario step's ``annotations``: the target's annotations from that step on, as ``kubectl annotate`` leaves
them (the engine reads the pause annotations among them: autoscaler.core.pause_spec)."""

from __future__ import annotations

from collections.abc import Mapping

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
