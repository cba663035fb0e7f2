"""What a target's pause is asked with: ``spec.pause`` and the ``autoscaler.dev/paused*`` annotations.

KEDA's ScaledObject pauses with four annotations (``autoscaling.keda.sh/paused``, ``paused-replicas``,
``paused-scale-in``, ``paused-scale-out``); a ScalingTarget takes the same four under ``autoscaler.dev/``,
so that ``kubectl annotate`` pauses a target without touching its spec (an annotation restarts nothing), and
the same three aspects in ``spec.pause`` for a pause that is part of the target's definition.

This module reads both; :mod:`autoscaler.core.pause` combines them (an annotation wins over the spec where
both say something) and applies the pause to a sync. A spec field is validated with the spec (an invalid
one makes the spec invalid, as any field); an annotation cannot be refused by the API server, so an invalid
one is reported on its own (a ``Paused`` condition and an Event naming it) and otherwise left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.core.gomath import MAX_INT32
from autoscaler.values.fields import Obj

PAUSED_ANNOTATION = "autoscaler.dev/paused"
PAUSED_REPLICAS_ANNOTATION = "autoscaler.dev/paused-replicas"
PAUSED_SCALE_IN_ANNOTATION = "autoscaler.dev/paused-scale-in"
PAUSED_SCALE_OUT_ANNOTATION = "autoscaler.dev/paused-scale-out"
PAUSE_ANNOTATIONS = (
    PAUSED_ANNOTATION,
    PAUSED_REPLICAS_ANNOTATION,
    PAUSED_SCALE_IN_ANNOTATION,
    PAUSED_SCALE_OUT_ANNOTATION,
)

# Go's strconv.ParseBool, which KEDA reads its annotations with: what it accepts, and nothing else.
_TRUE_TEXTS = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE_TEXTS = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_BOOLEAN_RULE = 'must be "true" or "false"'
_REPLICAS_RULE = f"must be a whole number of replicas from 0 to {MAX_INT32}"


@dataclass(frozen=True, slots=True)
class PauseSpec:
    """``spec.pause``: ``replicas``, scaled to and then held (KEDA's paused-replicas); ``scale_in`` and
    ``scale_out``, each direction held (both: held at the current count, KEDA's paused)."""

    replicas: int | None = None
    scale_in: bool = False
    scale_out: bool = False


@dataclass(frozen=True, slots=True)
class PauseAnnotations:
    """The pause annotations of a target as read: each None when absent (or invalid), and ``problems``, one
    text per invalid annotation naming it, its value and the rule it breaks."""

    paused: bool | None = None
    replicas: int | None = None
    scale_in: bool | None = None
    scale_out: bool | None = None
    problems: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        """Whether any annotation says something (a valid value, or an invalid one to report)."""
        return (
            self.paused is not None
            or self.replicas is not None
            or self.scale_in is not None
            or self.scale_out is not None
            or bool(self.problems)
        )


NO_ANNOTATIONS = PauseAnnotations()


def read_pause_spec(obj: Obj) -> PauseSpec | None:
    """``spec.pause``, its problems added to ``obj``'s error list (None when there are any)."""
    before = len(obj.errors.items)
    replicas = obj.integer("replicas", minimum=0, maximum=MAX_INT32)
    scale_in = obj.boolean("scaleIn", default=False)
    scale_out = obj.boolean("scaleOut", default=False)
    obj.finish()
    if len(obj.errors.items) > before or scale_in is None or scale_out is None:
        return None
    return PauseSpec(replicas, scale_in, scale_out)


def pause_annotation_items(annotations: object) -> tuple[tuple[str, str], ...]:
    """The pause annotations among a target's ``metadata.annotations`` (whatever it holds), in a fixed
    order: what a target keeps of its annotations for its pause."""
    if not isinstance(annotations, Mapping):
        return ()
    return tuple((key, str(annotations[key])) for key in PAUSE_ANNOTATIONS if annotations.get(key) is not None)


def read_pause_annotations(items: tuple[tuple[str, str], ...]) -> PauseAnnotations:
    """The pause annotations (:func:`pause_annotation_items`) read; an invalid value is a problem, not a value."""
    if not items:
        return NO_ANNOTATIONS
    values = dict(items)
    problems: list[str] = []
    paused = _boolean(values, PAUSED_ANNOTATION, problems)
    replicas = _replicas(values, problems)
    scale_in = _boolean(values, PAUSED_SCALE_IN_ANNOTATION, problems)
    scale_out = _boolean(values, PAUSED_SCALE_OUT_ANNOTATION, problems)
    return PauseAnnotations(paused, replicas, scale_in, scale_out, tuple(problems))


def _boolean(values: dict[str, str], key: str, problems: list[str]) -> bool | None:
    text = values.get(key)
    if text is None:
        return None
    if text in _TRUE_TEXTS:
        return True
    if text in _FALSE_TEXTS:
        return False
    problems.append(f'annotation {key}: "{text}": {_BOOLEAN_RULE}')
    return None


def _replicas(values: dict[str, str], problems: list[str]) -> int | None:
    text = values.get(PAUSED_REPLICAS_ANNOTATION)
    if text is None:
        return None
    if text.isascii() and text.isdigit() and int(text) <= MAX_INT32:
        return int(text)
    problems.append(f'annotation {PAUSED_REPLICAS_ANNOTATION}: "{text}": {_REPLICAS_RULE}')
    return None
