"""Per-step records for plots: the documented per-step JSON of ``simulate`` (``step_json``), reduced
to what a plot shows, so that anything a step adds there (the ``hvpa`` object) is plotted too."""

from __future__ import annotations

from typing import Any

from autoscaler.simulate.output import step_json
from autoscaler.simulate.runner import StepResult

# What plots read from a step's JSON; the rest (explanation, history, conditions…) is dropped.
PLOTTED_KEYS = ("at", "currentReplicas", "desiredReplicas", "replicas", "scaled", "rescaleReason", "limitedBy",
                "metrics", "hvpa")
_METRIC_KEYS = ("type", "resource", "containerResource", "pods", "object", "external", "error")


def slim(step: dict[str, Any]) -> dict[str, Any]:
    """``step`` (a ``step_json`` object) without what plots do not read."""
    record = {key: step[key] for key in PLOTTED_KEYS if key in step}
    record["metrics"] = [{k: m[k] for k in _METRIC_KEYS if k in m} for m in step.get("metrics", [])]
    return record


def plot_record(result: StepResult, *, real_replicas: int | None = None) -> dict[str, Any]:
    """The plotted part of one step; ``realReplicas`` is what the workload really had (backtests)."""
    record = slim(step_json(result))
    if real_replicas is not None:
        record["realReplicas"] = real_replicas
    return record
