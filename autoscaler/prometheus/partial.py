"""Partial answers: a success that some stores or storage nodes did not contribute to.

Backends that fan a query out over several stores can answer while one of them is down, as a success
with less data. A partial answer to ``sum(queue_depth)`` is a smaller sum, which reads as a real drop:
a scale-down from missing data. So a partial answer is a failed metric (it cannot vote; the engine then
allows no scale-down from it), never a value.

How each backend says so:

* VictoriaMetrics cluster (``vmselect``): ``"isPartial": true`` at the top of the answer (a single node
  never sets it). ``deny_partial_response=1`` makes it answer HTTP 503 instead.
* Thanos Query: the answer's ``warnings`` list the stores that failed, with Thanos' own texts
  (``pkg/store/proxy.go``, ``proxy_merge.go``): ``receive series from <store>: <error>``, ``fetch series
  for <store>: <error>``, ``failed to receive any data in <timeout> from <store>: <error>``.
  ``partial_response=false`` makes it fail the query instead (HTTP 422 ``execution``, the same texts in
  the error). A warning is not always a partial answer (Thanos' docs say so): PromQL's own annotations
  (``PromQL info: …``, ``PromQL warning: …``) are not.
* Anything else whose warning says its data is partial (``partial response``, ``partial result``,
  ``partial data``).

Warnings that say none of this are logged and counted, and do not fail the metric.
"""

from __future__ import annotations

from autoscaler.prometheus.results import InstantResult, RangeResult

# Lower-case fragments of a warning (or error) text that mean a store did not contribute its data.
STORE_FAILURE_TEXTS = (
    "receive series from",  # Thanos: a store's stream of series broke off
    "fetch series for",  # Thanos: a store could not be asked
    "failed to receive any data",  # Thanos: a store sent nothing within its frame timeout
    "no storeapis available",  # Thanos: no store at all
)
PARTIAL_TEXTS = ("partial response", "partial result", "partial data", *STORE_FAILURE_TEXTS)
_CAUSE_LIMIT = 300
IS_PARTIAL_CAUSE = '"isPartial": true (a VictoriaMetrics cluster answered without some vmstorage nodes)'


def says_partial(warning: str) -> bool:
    """Whether a warning says the answer lacks some stores' data."""
    text = warning.lower()
    return any(fragment in text for fragment in PARTIAL_TEXTS)


def names_a_store_failure(error: str) -> bool:
    """Whether an error text (a Thanos query that failed because partial answers were denied) names a
    store that did not answer: the backend failed, the query itself is fine."""
    text = error.lower()
    return any(fragment in text for fragment in STORE_FAILURE_TEXTS)


def partial_cause(result: InstantResult | RangeResult) -> str | None:
    """Why ``result`` is partial (the backend's own words, shortened), or None when it is whole."""
    if result.partial:
        return IS_PARTIAL_CAUSE
    for warning in result.warnings:
        if says_partial(warning):
            return shorten(warning)
    return None


def other_warnings(result: InstantResult | RangeResult) -> list[str]:
    """The warnings of ``result`` that do not make it partial (PromQL's annotations, for example)."""
    return [w for w in result.warnings if not says_partial(w)]


def shorten(text: str, limit: int = _CAUSE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
