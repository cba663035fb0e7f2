"""Which of the series the adapter's rules could serve exist in Prometheus (``--prometheus``).

The adapter only serves a metric for series its ``seriesQuery`` finds; without asking, the
converter can only assume the series behind a name exists. One instant query settles it for every
candidate at once: the metric names that had samples within the last hour (the adapter itself
lists series over a recent window), or, for ``--compare``, anywhere in the range compared."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.convert.adapter_config import AdapterConfig
from autoscaler.convert.adapter_query import candidate_series
from autoscaler.prometheus.promql import regex_literal
from autoscaler.values.durations import format_prometheus_duration

LOOKBACK_SECONDS = 3600.0


def metric_names(objects: Iterable[tuple[Mapping[str, Any], str]]) -> list[str]:
    """The custom and external metric names the HPAs among ``objects`` ask for."""
    names = []
    for document, _ in objects:
        if document.get("kind") != "HorizontalPodAutoscaler":
            continue
        for metric in (document.get("spec") or {}).get("metrics") or []:
            if not isinstance(metric, Mapping) or not isinstance(metric.get("type"), str):
                continue
            kind = metric["type"]
            source = metric.get(kind[0].lower() + kind[1:]) if kind else None
            inner = source.get("metric") if isinstance(source, Mapping) else None
            if isinstance(inner, Mapping) and isinstance(inner.get("name"), str):
                names.append(inner["name"])
    return names


def presence_query(config: AdapterConfig, names: Iterable[str], lookback: float = LOOKBACK_SECONDS) -> str | None:
    candidates = sorted({c for name in names for c in candidate_series(config, name)})
    if not candidates:
        return None
    return (
        f"group by (__name__) (last_over_time({{__name__=~{regex_literal(candidates)}}}"
        f"[{format_prometheus_duration(lookback)}]))"
    )


async def known_series(client: Any, query: str, at: float) -> frozenset[str]:
    result = await client.query(query, at)
    return frozenset(series.labels.get("__name__", "") for series in result.vector or ())
