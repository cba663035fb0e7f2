"""Decoding the API server's JSON without letting one odd object take a cache down.

The fast path is orjson. It refuses what the API server can legitimately send inside custom resources
whose schema keeps unknown fields (the ScalingTarget's ``spec.hvpa``, for one): nesting deeper than 1,024
levels (the API server accepts up to 10,000), integers beyond 64 bits, numbers beyond a double. The
standard library's decoder is no better: it raises RecursionError at ~1,000 levels. One such object in a
LIST page or a watch event used to kill the watch cache that read it.

So a payload orjson refuses is decoded again by ijson's pure-Python parser, which keeps no recursion of
its own: any depth, any integer. Below :data:`MAX_DEPTH` levels the document is built as usual; a subtree
that starts deeper is replaced by a :class:`TooDeep` marker, so the object's name, namespace and
everything shallow survive, and the limits check (:mod:`autoscaler.values.limits`, 32 levels) rejects
the object with the path where it is too deep. Numbers beyond a double become ±inf, as Python's own decoder makes them.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from typing import Any

import ijson
import orjson

# The deepest level built by the tolerant decoder: far above the limits check's 32 levels, so a cut
# subtree is always reported as too deep.
MAX_DEPTH = 256

_PARSER = ijson.get_backend("python")  # the C backends overflow on integers beyond 64 bits


class TooDeep:
    """Stands in for a subtree nested deeper than :data:`MAX_DEPTH` levels."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<nested deeper than {MAX_DEPTH} levels>"


TOO_DEEP = TooDeep()


def loads(payload: bytes | str) -> Any:
    """The decoded document; raises ValueError when ``payload`` is not JSON at all."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return tolerant_loads(payload)


def tolerant_loads(payload: bytes | str) -> Any:
    """Decode without recursion; subtrees deeper than :data:`MAX_DEPTH` become :data:`TOO_DEEP`."""
    data = payload.encode() if isinstance(payload, str) else payload
    try:
        return _build(_PARSER.basic_parse(data))
    except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None


def _build(events: Iterator[tuple[str, Any]]) -> Any:
    stack: list[Any] = []  # the open containers that are being built
    keys: list[Any] = []  # for each open container: the key its next value goes under (None in a list)
    skipping = 0  # open containers below the cut (counted, not built)
    root: Any = None
    done = False

    def put(value: Any) -> None:
        nonlocal root, done
        if not stack:
            root, done = value, True
            return
        container = stack[-1]
        if isinstance(container, dict):
            container[keys[-1]] = value
        else:
            container.append(value)

    for event, value in events:
        if skipping:
            if event in ("start_map", "start_array"):
                skipping += 1
            elif event in ("end_map", "end_array"):
                skipping -= 1
                if not skipping:
                    put(TOO_DEEP)
            continue
        if event in ("start_map", "start_array"):
            if len(stack) >= MAX_DEPTH:
                skipping = 1
                continue
            container: dict[str, Any] | list[Any] = {} if event == "start_map" else []
            put(container)
            stack.append(container)
            keys.append(None)
        elif event in ("end_map", "end_array"):
            stack.pop()
            keys.pop()
        elif event == "map_key":
            keys[-1] = value
        else:
            put(float(value) if isinstance(value, decimal.Decimal) else value)
    if not done:
        raise ValueError("not JSON: the document ended early")
    return root
