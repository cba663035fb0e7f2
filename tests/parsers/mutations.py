"""Hypothesis strategies that break good documents the ways people and programs do.

Two families: byte-level edits of a file as written (a flipped or deleted byte, a pasted fragment, a
truncation, bytes that are not UTF-8, a huge number, nesting thousands deep), and edits of the document
as data (a value of another type, a deleted or unknown key, a value moved elsewhere, a huge number, a
deep or very large value). The shipped files are the seeds, so most mutants are near misses that get
deep into the parsers instead of failing at the first line.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

# Fragments pasted into a file: YAML syntax, tags, anchors, numbers and bytes that broke parsers before.
FRAGMENTS: tuple[bytes, ...] = (
    b"\xff",
    b"\xfe\xff",
    b"\xc3",
    b"\xe9",
    b"\x00",
    b"\x1b",
    b"\t",
    b"\r",
    b"\n",
    b" ",
    b"'",
    b'"',
    b"\\",
    b"- ",
    b": ",
    b"? ",
    b"#",
    b"|",
    b">",
    b"&a ",
    b"*a",
    b"<<: *a",
    b"---\n",
    b"...\n",
    b"%YAML 1.1\n",
    b"!!binary aGVsbG8=",
    b"!!set {a, b}",
    b"!!omap [a: 1]",
    b"!!timestamp 2024-01-01",
    b"!!python/object:os.system",
    b"!!float",
    b"!!int",
    b"!!bool",
    b"!!null",
    b"!!str",
    b"!!map",
    b"!!seq",
    b"!custom",
    b"~",
    b"null",
    b"true",
    b"no",
    b"on",
    b"[]",
    b"{}",
    b"[",
    b"{",
    b"9" * 400,
    b"-" + b"9" * 400,
    b"9" * 5000,
    b"1e999",
    b"-1e999",
    b".inf",
    b"-.inf",
    b".nan",
    b"0x7fffffffffffffff",
    b"1e-999",
    b"0.0000000001",
    b"2147483648",
    b"9223372036854775808",
    b"-1",
    b"0",
    b"1_000",
    b"0o17",
    b"1:30",
    b"2024-01-01",
    b"2024-01-01T00:00:00Z",
    b"500m",
    b"1.5Gi",
    b"1e1000",
    b"9" * 1200 + b"Ei",
    b"1e" + b"9" * 50,
    b"[" * 40 + b"]" * 40,
    b"[" * 3000 + b"]" * 3000,
    b"{a: " * 50 + b"1" + b"}" * 50,
    b"a" * 5000,
)

NASTY_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    -(2**31) - 1,
    2**63,
    -(2**63) - 1,
    10**400,
    -(10**400),
    10**4000,
    0.5,
    -0.5,
    1e308,
    -1e308,
    5e-324,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    " ",
    "x" * 10_000,
    "500m",
    "-500m",
    "1e999",
    "1e1000",
    "9" * 2000,
    "0.000000001",
    "2Ei",
    "Utilization",
    "AverageValue",
    "Deployment",
    "cpu",
    "memory",
    "True",
    "Unknown",
    "2024-01-01T00:00:00Z",
    "not-a-time",
    "\x00",
    "é",
    "{{<<scope>>}}",
    "-2h",
    [],
    {},
    [None],
    [[]],
    {"": None},
    {"a": 1},
    [1, "a", None],
)


def deep_value(levels: int, *, lists: bool) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value] if lists else {"x": value}
    return value


def paths(document: Any) -> Iterator[tuple[Any, ...]]:
    """Every place in ``document``, as the keys and indices leading to it (the root is ``()``)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(document, ())]
    while stack:
        node, where = stack.pop()
        yield where
        if isinstance(node, dict):
            stack.extend((child, (*where, key)) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, (*where, index)) for index, child in enumerate(node))


def _get(document: Any, where: tuple[Any, ...]) -> Any:
    for step in where:
        document = document[step]
    return document


def _set(document: Any, where: tuple[Any, ...], value: Any) -> Any:
    if not where:
        return value
    _get(document, where[:-1])[where[-1]] = value
    return document


@st.composite
def byte_mutants(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with one to four byte-level edits."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "delete", "insert", "insert", "duplicate", "truncate"]))
        if kind == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(FRAGMENTS))
        elif kind == "duplicate":
            start = draw(st.integers(0, len(data)))
            data[at:at] = data[start : start + draw(st.integers(1, 200))]
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


@st.composite
def data_mutants(draw: st.DrawFn, seed: Any) -> Any:
    """A copy of the document ``seed`` with one to three edits of its data."""
    document = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 3))):
        places = list(paths(document))
        where = draw(st.sampled_from(places))
        kind = draw(st.sampled_from(["replace", "replace", "delete", "unknown", "move", "wrap", "deep", "large"]))
        parent = _get(document, where[:-1]) if where else None
        if kind == "replace":
            document = _set(document, where, copy.deepcopy(draw(st.sampled_from(NASTY_VALUES))))
        elif kind == "delete" and where:
            del parent[where[-1]]
        elif kind == "unknown":
            target = _get(document, where)
            if isinstance(target, dict):
                target[draw(st.sampled_from(["extra", "Spec", "metric", "", "x" * 300]))] = copy.deepcopy(
                    draw(st.sampled_from(NASTY_VALUES))
                )
        elif kind == "move":
            source = draw(st.sampled_from(places))
            document = _set(document, where, copy.deepcopy(_get(document, source)))
        elif kind == "wrap":
            value = _get(document, where)
            document = _set(document, where, draw(st.sampled_from([[value], {"value": value}])))
        elif kind == "deep":  # the last edit: later ones would copy it, recursively
            levels = draw(st.sampled_from([31, 33, 60, 900]))
            return _set(document, where, deep_value(levels, lists=draw(st.booleans())))
        else:  # many values where there were few; the last edit, as later ones would walk every copy
            value = _get(document, where)
            many = [value] * 20 if isinstance(value, dict | list) else [value] * draw(st.sampled_from([100, 5000]))
            return _set(document, where, many)
    return document


def as_json_bytes(document: Any) -> bytes:
    """The document written as JSON (which YAML reads) when it can be, else as the Python text it is."""
    try:
        return json.dumps(document).encode()
    except (ValueError, RecursionError):  # a 4000-digit integer, or nesting json cannot write
        return repr(document).encode()
