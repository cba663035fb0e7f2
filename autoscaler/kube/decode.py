"""Decoding JSON from the API server without dying on an object nested too deeply.

The API server keeps what a custom resource's schema lets through, and ``x-kubernetes-preserve-unknown-fields``
(``spec.hvpa`` of a ScalingTarget) lets through nesting thousands of levels deep. Python's ``json.loads``
recurses once per level and raises ``RecursionError`` somewhere below a thousand, which would take a
whole list or watch stream down with it, and every relist after it. So a body that is too deep for
``json.loads`` is decoded again with every object or list below :data:`KEEP_LEVELS` levels replaced by
null: the object's identity (its metadata) survives, and the limits check of
:mod:`autoscaler.core.limits` then marks the one object invalid, with the path where it is too deep.
"""

from __future__ import annotations

import json
import re
from typing import Any

from autoscaler.core.limits import MAX_DEPTH

# Deeper than any limit the parsers apply, so a cut subtree is always reported as too deep; far
# shallower than what json.loads can decode from inside a deep asyncio stack.
KEEP_LEVELS = MAX_DEPTH + 8

# A JSON string (escapes included) or a bracket: scanning by this skips brackets inside strings.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads``, or for a document too deep for it, the document cut at :data:`KEEP_LEVELS`."""
    try:
        return json.loads(data)
    except RecursionError:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        return json.loads(cut_deep(text, KEEP_LEVELS))


def cut_deep(text: str, keep: int) -> str:
    """``text`` (JSON) with every object or list nested more than ``keep`` levels deep replaced by null."""
    pieces: list[str] = []
    depth = 0
    copied_to = 0
    cut_from: int | None = None
    for token in _TOKEN.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth == keep + 1:
                cut_from = token.start()
        elif bracket in "]}":
            if depth == keep + 1 and cut_from is not None:
                pieces.append(text[copied_to:cut_from])
                pieces.append("null")
                copied_to = token.end()
                cut_from = None
            depth -= 1
    pieces.append(text[copied_to:])
    return "".join(pieces)
