"""The paths a sync's decision takes (``Decision.branch``), each in words for ``explain`` and ``simulate``.

Apart from :mod:`autoscaler.core.decision` because only the text around a decision reads it.
"""

from __future__ import annotations

BRANCHES = {
    "disabled": "the target has 0 replicas: scaling is disabled",
    "above-max": "current replicas above maxReplicas",
    "below-min": "current replicas below minReplicas",
    "selector": "the scale's selector cannot be used",
    "metrics-failed": "no usable metric proposal",
    "metrics": "metrics computed",
    "hvpa-only": "the HPA is not an HVPA source (hvpa.sources): no metric is read",
    "activation": "spec.activation: idle <-> active (autoscaler.core.activation)",
}
