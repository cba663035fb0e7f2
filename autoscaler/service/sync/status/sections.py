"""The sections of a target's status besides the HPA engine's own, each written and read back side by side:
``pendingScale`` (a scale write recorded before it is sent), ``lastActiveTime`` (``spec.activation``),
``metricHealth`` (``spec.fallback``) and ``hvpa``. The pause's section is core's
(:func:`~autoscaler.core.pause.pause_status`). The status as a whole, and
:func:`~autoscaler.service.sync.status.restore`, which reads these back with the rest:
:mod:`autoscaler.service.sync.status`.

``status.metricHealth`` is KEDA's ``status.health`` shape, keyed as
:func:`~autoscaler.core.metric_health.metric_keys` keys the metrics::

    metricHealth:
      external/queue_depth: {numberOfFailures: 4, status: Failing, since: "2026-12-02T03:00:15.25Z"}
      resource/cpu: {numberOfFailures: 0, status: Happy}

Restored, a fallback goes on counting where the last sync left off. The count stops at the failure the
fallback began at (core/metric_health.py says why), so an outage writes the status a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from autoscaler.core import conditions as c
from autoscaler.core.decision import Decision
from autoscaler.core.gomath import MAX_INT32
from autoscaler.core.history import ScaleIntent
from autoscaler.core.hvpa import recommendation_window
from autoscaler.core.hvpa.decision import HvpaDecision, HvpaState
from autoscaler.core.hvpa.explain import explain_hvpa, hvpa_json
from autoscaler.core.hvpa.vpa_patch import quantity_text
from autoscaler.core.metric_health import MetricHealth
from autoscaler.core.pause import pause_status
from autoscaler.values.loose_json import as_mapping, mappings_in
from autoscaler.values.quantity import Quantity, QuantityError
from autoscaler.values.timestamps import parse_rfc3339, rfc3339


def replica_count(value: object) -> int | None:
    """A count as the service writes one (replicas, a change of them, a metric's failures: an int32), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT32 else None


LAST_ACTIVE_TIME = "lastActiveTime"  # KEDA's status field


def activation_status(decision: Decision) -> dict[str, Any]:
    """``status.lastActiveTime`` of a target with ``activation`` while it is not active: the last sync a metric
    was above its activation threshold, which the cooldown to idle counts from. While the target is active
    (condition Active True) it is left out: it would change at every sync, and a status is not written only
    for that; a restore takes an active target as active until the moment of the restore (never a shorter
    cooldown)."""
    outcome = decision.activation
    if outcome is None or outcome.active or outcome.last_active_time is None:
        return {}
    return {LAST_ACTIVE_TIME: rfc3339(outcome.last_active_time, fraction=True)}


def restore_last_active_time(status: Mapping[str, Any], now: float) -> float | None:
    """The last time a restored target was active: now if its status says it is (Active True), else what
    ``status.lastActiveTime`` says (None: never active, or no activation)."""
    for condition in mappings_in(status.get("conditions")):
        if condition.get("type") == "Active" and condition.get("status") == c.TRUE:
            return now
    return parse_rfc3339(status.get(LAST_ACTIVE_TIME))


PENDING_SCALE = "pendingScale"  # the status key of a scale write recorded before it is sent


def scale_intent_document(intent: ScaleIntent) -> dict[str, Any]:
    """``status.pendingScale``: the scale write about to be sent (its time as exact as the history's)."""
    return {
        "fromReplicas": intent.previous,
        "toReplicas": intent.replicas,
        "at": rfc3339(intent.at, fraction=True),
        "reason": intent.reason,
    }


def restore_scale_intent(document: object) -> ScaleIntent | None:
    """The scale write a status recorded before sending it; None for none (or one that cannot be read)."""
    if not isinstance(document, Mapping):
        return None
    previous, replicas = replica_count(document.get("fromReplicas")), replica_count(document.get("toReplicas"))
    at = parse_rfc3339(document.get("at"))
    if previous is None or replicas is None or at is None or previous == replicas:
        return None
    reason = document.get("reason")
    return ScaleIntent(previous, replicas, at, reason if isinstance(reason, str) else "")


def decision_sections(decision: Decision) -> dict[str, Any]:
    """The sections of the status a decision writes besides the HPA engine's own (which
    :func:`status_document` writes): ``lastActiveTime``, ``metricHealth`` and ``pause``, each only when the
    target has it. ``hvpa`` is the caller's: HVPA's decision, or the last status' while a scale is recorded."""
    sections = activation_status(decision)
    sections.update(fallback_status(decision))
    sections.update(pause_status(decision))
    return sections


METRIC_HEALTH = "metricHealth"  # the status key of spec.fallback's health (the module docstring shows it)


def metric_health_document(health: Sequence[MetricHealth]) -> dict[str, Any]:
    """``status.metricHealth``'s value (``since`` as exact as the history's times)."""
    document: dict[str, Any] = {}
    for item in health:
        entry: dict[str, Any] = {"numberOfFailures": item.failures, "status": item.status}
        if item.since is not None and item.failures > 0:
            entry["since"] = rfc3339(item.since, fraction=True)
        document[item.key] = entry
    return document


def fallback_status(decision: Decision) -> dict[str, Any]:
    """The status section of a target with ``spec.fallback`` (empty for any other target: the status write
    drops a ``metricHealth`` the target no longer has)."""
    if not decision.metric_health:
        return {}
    return {METRIC_HEALTH: metric_health_document(decision.metric_health)}


def restore_metric_health(document: object) -> tuple[MetricHealth, ...]:
    """The health a status kept; entries that cannot be read are left out (their metric starts at 0)."""
    restored = []
    for key, entry in as_mapping(document).items():
        if not isinstance(key, str) or not isinstance(entry, Mapping):
            continue
        failures = replica_count(entry.get("numberOfFailures"))
        if failures is None:
            continue
        since = parse_rfc3339(entry.get("since")) if failures > 0 else None
        restored.append(MetricHealth(key=key, failures=failures, since=since))
    return tuple(restored)


HVPA = "hvpa"  # the status key of HVPA's section


def hvpa_status(decision: HvpaDecision, state: HvpaState) -> dict[str, Any]:
    """The ``status.hvpa`` section: what HVPA decided (as ``simulate --output json`` shows it), its
    explanation, and the state the next sync starts from."""
    summary = hvpa_json(decision)
    summary.pop("vpaPatch", None)  # the patch is applied, not stored
    return {
        **summary,
        "inactive": decision.inactive,
        "blockDetail": decision.block_detail or None,
        "explanation": explain_hvpa(decision),
        "state": hvpa_state_document(state),
    }


def hvpa_state_document(state: HvpaState) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "pins": {c: {r: quantity_text(r, v) for r, v in amounts.items()} for c, amounts in state.pins.items()}
    }
    if state.last_applied is not None:
        doc["lastApplied"] = rfc3339(state.last_applied, fraction=True)
    if state.history:  # stabilizationMode WindowMax: the proposals still inside the window
        doc["recommendations"] = [
            {
                "time": rfc3339(s.at, fraction=True),
                "container": s.container,
                "resource": s.resource,
                "replicas": s.replicas,
                "request": quantity_text(s.resource, s.request),
            }
            for s in state.history
        ]
    return doc


def restore_hvpa_state(document: object) -> HvpaState:
    """HVPA's state from ``status.hvpa.state``; a pin or a recommendation that does not read is left out."""
    if not isinstance(document, Mapping):
        return HvpaState()
    pins: dict[str, dict[str, Fraction]] = {}
    for container, amounts in as_mapping(document.get("pins")).items():
        if not isinstance(amounts, Mapping):
            continue
        for resource, text in amounts.items():
            try:
                pins.setdefault(str(container), {})[str(resource)] = Quantity.parse(str(text)).value
            except QuantityError:
                continue
    return HvpaState(
        last_applied=parse_rfc3339(document.get("lastApplied")),
        pins=pins,
        history=_restore_hvpa_recommendations(document.get("recommendations")),
    )


def _restore_hvpa_recommendations(entries: object) -> tuple[recommendation_window.Recommendation, ...]:
    """The WindowMax history from status; an entry that does not read (edited by hand) is left out."""
    history: list[recommendation_window.Recommendation] = []
    for entry in mappings_in(entries):
        at = parse_rfc3339(entry.get("time"))
        container, resource, replicas = entry.get("container"), entry.get("resource"), entry.get("replicas")
        if at is None or not isinstance(container, str) or not isinstance(resource, str):
            continue
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            continue
        try:
            request = Quantity.parse(str(entry.get("request"))).value
        except QuantityError:
            continue
        history.append(recommendation_window.Recommendation(at, container, resource, replicas, request))
    return tuple(history)
