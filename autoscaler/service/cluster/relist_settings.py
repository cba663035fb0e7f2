"""The ``kubernetes.relists`` settings: the watch caches' backoff between failed attempts, and how many relists
in how long make a cache one that relists too often (``/readyz`` fails; :mod:`autoscaler.kube.relists`).

.. code-block:: yaml

    kubernetes:
      relists: {backoffStartSeconds: 0.8, backoffCapSeconds: 30, limit: 5, windowSeconds: 60}

The defaults are client-go's reflector backoff and this service's limit; a smaller window and backoff notice a
relisting cache sooner, at the cost of more LISTs against a failing API server.
"""

from __future__ import annotations

from autoscaler.kube.relists import DEFAULT_RELIST_POLICY, RelistPolicy
from autoscaler.values.fields import Obj

__all__ = ["read_relist_settings"]


def read_relist_settings(obj: Obj | None) -> RelistPolicy | None:
    """The policy ``obj`` (the ``kubernetes.relists`` object) sets, or None after reporting its problems."""
    default = DEFAULT_RELIST_POLICY
    if obj is None:
        return default
    start = obj.number("backoffStartSeconds", default=default.backoff_start, minimum=0.1, maximum=60)
    cap = obj.number("backoffCapSeconds", default=default.backoff_cap, minimum=0.1, maximum=3600)
    limit = obj.integer("limit", default=default.limit, minimum=1, maximum=1000)
    window = obj.number("windowSeconds", default=default.window, minimum=1, maximum=3600)
    if start is not None and cap is not None and cap < start:
        obj.error("backoffCapSeconds", f"must be at least backoffStartSeconds ({start:g})")
        cap = None
    obj.finish()
    if start is None or cap is None or limit is None or window is None:
        return None
    return RelistPolicy(start, cap, limit, window)
