"""The state a target's pause carries from sync to sync, and its place in the status (``status.pause``).

Apart from :mod:`autoscaler.core.pause` because :class:`~autoscaler.core.decision.TargetState` holds it (and
that module reads decisions).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.core.gomath import MAX_INT32
from autoscaler.values.timestamps import parse_rfc3339, rfc3339


class PauseMode(enum.StrEnum):
    PAUSED = "paused"  # held at the current count
    REPLICAS = "replicas"  # scaled to a count once, then held
    SCALE_IN = "scaleIn"  # scale-down held
    SCALE_OUT = "scaleOut"  # scale-up held


@dataclass(frozen=True, slots=True)
class PauseState:
    """What a pause carries from sync to sync (``status.pause``): its mode and count, when the target became
    paused (``since``: kept while the mode changes, the Paused condition's transition time), and for the
    ``replicas`` mode whether the count was reached (written, or found) — from then on it is only held."""

    mode: PauseMode
    replicas: int | None
    since: float
    reached: bool = False


def pause_document(state: PauseState) -> dict[str, Any]:
    """``status.pause``: the mode, since when (as exact as the history's times), and the count."""
    document: dict[str, Any] = {"mode": state.mode.value, "since": rfc3339(state.since, fraction=True)}
    if state.replicas is not None:
        document["replicas"] = state.replicas
        document["reached"] = state.reached
    return document


def restore_pause(document: object) -> PauseState | None:
    """The pause state a status kept (:func:`pause_document`); None for none, or one that cannot be read."""
    if not isinstance(document, Mapping):
        return None
    mode_text, since = document.get("mode"), parse_rfc3339(document.get("since"))
    if mode_text not in {m.value for m in PauseMode} or since is None:
        return None
    mode = PauseMode(mode_text)
    replicas = document.get("replicas")
    if mode is PauseMode.REPLICAS:
        if not isinstance(replicas, int) or isinstance(replicas, bool) or not 0 <= replicas <= MAX_INT32:
            return None
        return PauseState(mode, replicas, since, document.get("reached") is True)
    return PauseState(mode, None, since)
