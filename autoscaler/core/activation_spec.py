"""``spec.activation``: KEDA's activation phase, as a target opts in to it (the fields and their rules).

A target with ``activation`` owns the step between "idle" and "running": it is *active* while one of its
Object or External metrics reads strictly above that metric's ``activationThreshold`` (KEDA's
``activationThreshold``, default 0), and then it runs at least ``max(minReplicas, 1)`` replicas; once no
metric has been active for ``cooldownSeconds`` (KEDA's ``cooldownPeriod``), it is scaled to
``idleReplicas`` (KEDA's ``idleReplicaCount``, default 0). Between the two bounds the HPA algorithm decides,
as without it. What a sync does with it is :mod:`autoscaler.core.activation`.

Per-pod metrics (Resource, ContainerResource, Pods) never make a target active: with no pod running they
have no value (KEDA's cpu and memory triggers cannot scale to zero either). So ``activation`` needs at
least one Object or External metric, and ``activationThreshold`` is a field of those two sources only
(read in :mod:`autoscaler.core.metric_spec_parse`); on a target without ``activation`` it would be ignored,
so it is an error there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autoscaler.core.gomath import MAX_INT32
from autoscaler.values.fields import Obj

if TYPE_CHECKING:  # autoscaler.core.spec imports this module (TargetSpec.activation)
    from autoscaler.core.spec import MetricSpec

DEFAULT_COOLDOWN_SECONDS = 300  # KEDA's defaultCooldownPeriod
DEFAULT_INITIAL_COOLDOWN_SECONDS = 0  # KEDA's defaultInitialCooldownPeriod
DEFAULT_IDLE_REPLICAS = 0
# A day at most for either cooldown: longer would keep idle capacity running for days after the last
# activity, which no scale-to-zero setup wants (KEDA has no bound; its examples stay within minutes).
MAX_COOLDOWN_SECONDS = 86400


@dataclass(frozen=True, slots=True)
class ActivationSpec:
    """``spec.activation`` after defaulting."""

    idle_replicas: int = DEFAULT_IDLE_REPLICAS
    cooldown_seconds: int = DEFAULT_COOLDOWN_SECONDS
    initial_cooldown_seconds: int = DEFAULT_INITIAL_COOLDOWN_SECONDS


def active_floor(min_replicas: int) -> int:
    """The fewest replicas an active target runs: ``minReplicas``, and 1 when that is 0 (KEDA's
    ``minReplicaCount: 0`` runs 1 replica while a trigger is active)."""
    return max(min_replicas, 1)


def read_activation_spec(
    obj: Obj, *, min_replicas: int | None, metrics: Sequence[MetricSpec] | None
) -> ActivationSpec | None:
    """The ``activation`` section ``obj`` of a spec whose minReplicas and metrics are already read (None
    when they are invalid); None when anything is invalid, each problem added with its path."""
    errors_before = len(obj.errors.items)
    idle = obj.integer("idleReplicas", default=DEFAULT_IDLE_REPLICAS, minimum=0, maximum=MAX_INT32)
    cooldown = obj.integer("cooldownSeconds", default=DEFAULT_COOLDOWN_SECONDS, minimum=0, maximum=MAX_COOLDOWN_SECONDS)
    initial = obj.integer(
        "initialCooldownSeconds", default=DEFAULT_INITIAL_COOLDOWN_SECONDS, minimum=0, maximum=MAX_COOLDOWN_SECONDS
    )
    if idle is not None and min_replicas is not None and idle >= active_floor(min_replicas):
        obj.error(
            "idleReplicas",
            f"must be less than max(minReplicas, 1) = {active_floor(min_replicas)}: "
            "an idle target runs fewer replicas than an active one",
        )
    if metrics is not None and not any(not m.is_pod_metric for m in metrics):
        obj.errors.add(
            obj.path,
            "needs at least one Object or External metric: only they can make a target active "
            "(per-pod metrics have no value while no pod runs)",
        )
    obj.finish()
    if len(obj.errors.items) > errors_before or idle is None or cooldown is None or initial is None:
        return None
    return ActivationSpec(idle_replicas=idle, cooldown_seconds=cooldown, initial_cooldown_seconds=initial)


def read_activation(
    spec: Obj, *, min_replicas: int | None, metrics: Sequence[MetricSpec] | None
) -> ActivationSpec | None:
    """The spec's ``activation`` (``spec`` is the spec's view), None without one; an ``activationThreshold``
    on a target without ``activation`` is an error at its path (it would be ignored)."""
    section = spec.obj("activation")
    composite = spec.has("composite")
    for index, metric in enumerate(metrics or ()):
        if metric.activation_threshold is None:
            continue
        where = f"{spec.at('metrics')}[{index}].{metric.type.source_key}.activationThreshold"
        if section is None:
            spec.errors.add(
                where, "Forbidden: read only by spec.activation (the target's idle <-> active phase), which is not set"
            )
        elif composite and metric.type.value == "External":  # the composite stands for every External metric
            spec.errors.add(
                where,
                "Forbidden: with spec.composite the composite value decides activity, against "
                "composite.activationTarget (KEDA's scalingModifiers): this threshold would be ignored",
            )
    if section is not None:
        return read_activation_spec(section, min_replicas=min_replicas, metrics=metrics)
    return None
