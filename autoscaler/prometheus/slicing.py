"""A large instant answer decoded a slice of series at a time, on the event loop between the slices.

Apart from :mod:`autoscaler.prometheus.results` (what an answer means) because it is how the largest
answers are read: in steps (see :mod:`autoscaler.loop.turns`), into a :class:`Vector`'s columns or
into the caller's :class:`SeriesSink`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any, Protocol

import orjson

from autoscaler.prometheus.errors import PrometheusMalformedResponse
from autoscaler.prometheus.results import (
    InstantResult,
    SeriesFilter,
    Vector,
    load_answer,
    parse_instant,
    success_data,
    vector_of,
)


class SeriesSink(Protocol):
    """What a caller reads a vector answer into instead of a :class:`Vector` (see :func:`instant_in_slices`):
    the decoded series, a slice at a time, go straight into what the caller makes of them."""

    def begin(self) -> None:
        """Forget what an earlier decode handed over: a new answer (or the same one again) starts."""

    def decode(self, raw: bytes) -> list[Any]:
        """A slice of the ``result`` array (its raw JSON, brackets included) decoded as the sink reads it: a
        ValueError when the sink cannot (an element it does not expect, or not JSON); the answer is then
        decoded into a :class:`Vector` instead."""

    def take(self, items: list[Any]) -> bool:
        """Take what :meth:`decode` made of a slice. False: the sink cannot read this answer (a case the
        caller reads otherwise); the answer is then decoded into a :class:`Vector` instead."""


_RESULT_KEY = re.compile(rb'"result"[ \t\n\r]*:[ \t\n\r]*\[')
_SPACE = re.compile(rb"[ \t\n\r]*")
_NEXT = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
_SERIES_SEPARATOR = b'},{"metric":'  # between two series as Prometheus writes them (no spaces)
SLICE_BYTES = 256 * 1024  # what one step decodes: ~1,500 series, a few milliseconds


def instant_in_slices(
    payload: bytes | bytearray,
    keep: SeriesFilter | None = None,
    *,
    sink: SeriesSink | None = None,
    slice_bytes: int = SLICE_BYTES,
) -> Generator[None, None, InstantResult]:
    """:func:`parse_instant` of a raw answer, ``slice_bytes`` of series per step, leaving out the series
    ``keep`` rejects: a generator that yields between steps and returns the result (the client runs it
    on the event loop, giving the loop a turn at each yield, see :mod:`autoscaler.loop.turns`).

    One ``orjson.loads`` of a 27 MB answer holds the interpreter for half a second or more, and so does
    taking 200,000 decoded series apart or freeing them at once. A step decodes ~256 KiB of the raw bytes
    (never the whole answer as text) and appends the series it keeps to the :class:`Vector`'s columns;
    the decoded objects, the series left out among them, are freed step by step.

    The vector is found by its key: in valid JSON an unescaped ``"result": [`` can only be an object's
    ``result`` key holding an array, and the envelope around it is then checked to be a ``vector``
    answer whose ``data.result`` is exactly that array. The slices are cut before a ``{"metric":`` that
    follows ``},``: with its unescaped quote it cannot be inside a string, and a series' labels are flat,
    so it starts a series of the array; a slice that does not decode to objects is an answer laid out
    otherwise. Anything unexpected (another result type, another layout, malformed JSON) is decoded
    whole by :func:`parse_instant`, which also gives the error message for a malformed answer.

    With a ``sink``, each slice's raw series go to it instead of into the columns, decoded its own way
    (``keep`` is then the sink's business), and the result says how many it took (``sunk``): the caller
    reads them as they come, without the columns in between. A sink that refuses a slice has the answer
    decoded again into a :class:`Vector`, filtered by ``keep``; so is every answer decoded whole.
    """
    if sink is not None:
        sink.begin()
        try:
            return (yield from _sliced(payload, keep, sink, slice_bytes))
        except _Refused:
            pass
    return (yield from _sliced(payload, keep, None, slice_bytes))


class _Refused(Exception):
    """The sink cannot read this answer."""


def _sliced(
    payload: bytes | bytearray, keep: SeriesFilter | None, sink: SeriesSink | None, slice_bytes: int
) -> Generator[None, None, InstantResult]:
    found_key = _RESULT_KEY.search(payload)
    if found_key is None:
        return parse_instant(load_answer(payload))
    vector = Vector()
    left_out = sunk = 0
    try:
        position = _SPACE.match(payload, found_key.end()).end()  # type: ignore[union-attr]
        last_cut = payload.rfind(_SERIES_SEPARATOR)
        while True:
            cut = payload.find(_SERIES_SEPARATOR, position + slice_bytes)
            cut = last_cut if cut == -1 else cut
            if cut <= position:
                break
            # Whole series up to the "}" at cut; the next one starts at cut + 2.
            raw = b"[" + payload[position : cut + 1] + b"]"
            if sink is None:
                items = orjson.loads(raw)
                left_out += _take(items, keep, vector)
                # Freed now, inside the step: held by this frame across the yield, the slice's ~4,500 decoded
                # containers were what the collection due at the step's end walked (see turns.py).
                del items
            else:
                sunk += _sink(raw, sink)  # what the sink decoded is freed inside the step too
            position = cut + 2
            yield
        # The rest: the last series (or every one, in an answer laid out otherwise), one at a time.
        tail = payload[position:].decode("utf-8")
        at = 0
        if tail.startswith("]"):
            at = 1
        else:
            scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # raw_decode without its checks
            stepped = 0
            while True:
                start = at
                item, at = scan(tail, at)
                if sink is None:
                    left_out += _take([item], keep, vector)
                else:
                    sunk += _sink(f"[{tail[start:at]}]".encode(), sink)
                found = _NEXT.match(tail, at)
                if found is None:
                    raise ValueError("no ',' or ']' after a series")
                at = found.end()
                if found.group(1) == "]":
                    break
                if at - stepped >= slice_bytes:
                    stepped = at
                    yield
        rest = tail[at:].encode()
        if _RESULT_KEY.search(rest):  # another "result" array: not the layout expected
            return parse_instant(load_answer(payload))
        # The envelope without the series: "warnings" and "isPartial" may stand before or after "data".
        outer = orjson.loads(payload[: found_key.end()] + b"]" + rest)
    except (ValueError, StopIteration):  # JSONDecodeError is a ValueError; the scanner raises StopIteration
        return parse_instant(load_answer(payload))
    envelope = success_data(outer)
    if envelope.data.get("resultType") != "vector" or envelope.data.get("result") != []:
        return parse_instant(load_answer(payload))
    return InstantResult(
        "vector",
        vector=vector,
        warnings=envelope.warnings,
        left_out=left_out,
        partial=envelope.partial,
        sunk=None if sink is None else sunk,
    )


def _sink(raw: bytes, sink: SeriesSink) -> int:
    """Have ``sink`` decode and take a slice's ``raw`` series; how many there were. :class:`_Refused` if it
    cannot read them."""
    try:
        items = sink.decode(raw)
    except ValueError:
        raise _Refused from None
    if not sink.take(items):
        raise _Refused
    return len(items)


def _take(items: object, keep: SeriesFilter | None, vector: Vector) -> int:
    """Append the decoded ``items`` that ``keep`` keeps to ``vector``; how many it left out. A ValueError
    for items that are not a vector's series (the caller then decodes the answer whole)."""
    if type(items) is not list:
        raise ValueError("not an array of series")
    kept: list[Any] = []
    left_out = 0
    for item in items:
        if type(item) is not dict:
            raise ValueError("a series is not an object")
        labels = item.get("metric")
        if keep is not None and type(labels) is dict and not keep(labels):
            left_out += 1
        else:
            kept.append(item)
    try:
        vector_of(kept, into=vector)
    except PrometheusMalformedResponse:  # a matrix's series, or a malformed one: the whole decode says which
        raise ValueError("not a vector's series") from None
    return left_out
