"""The service's sinks and its one redaction.

A backend's error text may repeat the request, secrets and all, and the service passes such texts on: a
metric's failure becomes a condition's message, the status written to the cluster, an Event,
``/api/targets``, a log line. The Prometheus client redacts what it makes, with the service's one
:class:`~autoscaler.prometheus.redaction.KnownSecrets`; every sink redacts again with the same object, right
before the text leaves (a text made anywhere else, or a token the client read after the text was made, is
caught there): the writer (:class:`~autoscaler.service.sync.writes.ApiWriter`: statuses and Events), the HTTP
server (``/api/targets``, the probes' details) and the log
(:func:`~autoscaler.service.telemetry.logs.redact_known_secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.prometheus.redaction import KnownSecrets

# The parts of a status never redacted: ``currentMetrics`` restate the spec's metric identities (a
# selector's labels may equal a configured value, e.g. a tenant's name), never a backend's text.
NEVER_REDACTED = frozenset({"currentMetrics"})


def redacted_status(secrets: KnownSecrets, status: Mapping[str, Any]) -> Mapping[str, Any]:
    """``status`` as a sink may show it: every string of it redacted, but :data:`NEVER_REDACTED`'s."""
    redacted: Mapping[str, Any] = secrets.redact_document(status, keep=NEVER_REDACTED)
    return redacted
