"""A per-pod answer's series decoded straight into small typed records, for
:class:`~autoscaler.prometheus.extract.PodReadings`.

orjson makes every series of an answer a dict, a dict of its labels and a list of its value, each an object
the cyclic collector counts and walks, and a string for every label, the ones no reading uses included. A
batched sync at 10,000 targets decodes 200,000 series a period. msgspec decodes a slice of them into one
record a series holding only the three labels the readings use (any other label is skipped, never made),
records the collector does not track, with the value checked to be a pair of a number and a string: what
the reader's sink takes, with no check of its own left to make per series: fewer instructions a series
than orjson's dicts, and less of the service's CPU at 10,000 targets (why: docs/benchmarks-history.md,
"Typed records for the answers").

What msgspec refuses (an element that is not a vector's series, a label that is not a string, a time that
is not a number) makes the sink refuse the answer, which is then decoded as before.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import msgspec

__all__ = ["SeriesDecoding", "series_decoding"]


class SeriesDecoding:
    """How the series of one set of label names are decoded (:func:`series_decoding`): each record has
    ``metric.pod``, ``metric.namespace`` (None when the series has no such label), ``metric.container`` ("" when
    it has none) and ``value``, ``(time, text)``."""

    __slots__ = ("_decoder", "_list_type")

    def __init__(self, series_type: type[msgspec.Struct]) -> None:
        self._list_type = list[series_type]  # type: ignore[valid-type]
        self._decoder = msgspec.json.Decoder(self._list_type)

    def decode(self, raw: bytes) -> list[Any]:
        """The records of a JSON array of series. A ValueError (msgspec's errors are ValueErrors) for
        anything else."""
        return self._decoder.decode(raw)

    def convert(self, series: list[dict[str, Any]]) -> list[Any]:
        """The records of series already decoded (``{"metric": labels, "value": (time, text)}``); a ValueError
        as for :meth:`decode`."""
        return msgspec.convert(series, self._list_type)


@lru_cache(maxsize=16)
def series_decoding(pod: str, namespace: str, container: str) -> SeriesDecoding | None:
    """The decoding of series whose pod, namespace and container are the labels so named; None when two of
    the names are the same label (the records cannot hold it twice: such an answer is read as a vector)."""
    if len({pod, namespace, container}) < 3:
        return None
    labels = msgspec.defstruct(
        "Labels",
        [("pod", str | None, None), ("namespace", str | None, None), ("container", str, "")],
        rename={"pod": pod, "namespace": namespace, "container": container},
        frozen=True,
        gc=False,
    )
    series = msgspec.defstruct(
        "Series",
        [("value", tuple[float, str]), ("metric", labels, labels())],
        gc=False,
    )
    return SeriesDecoding(series)
