"""Building blocks for safe PromQL: string literals, regex alternations, label matchers (durations are
:mod:`autoscaler.values.durations`).

Every value that reaches a query from the outside (a namespace, a pod name, a selector value) goes
through :func:`string_literal` or :func:`regex_literal`, which return a complete double-quoted
PromQL string. A value can therefore never end the string it sits in and inject PromQL.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A word boundary that is not one: matches no label value, including the empty one. Not the character class
# no character belongs to ([^\x00-\x{10FFFF}]): VictoriaMetrics' regex optimizer (v1.79) matched "(" with it,
# and "a" with "a^" (test_live checks the pattern against both backends).
MATCH_NOTHING = "\\b\\B"
_RE2_SPECIAL = re.compile(r"[\\.+*?()|\[\]{}^$]")

# Go string escapes PromQL's lexer understands; anything else below U+0020 (and DEL) goes as \uXXXX.
_SIMPLE_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}
# What string_literal escapes (a pattern, not a loop over characters: a batched query may name thousands of pods).
_TO_ESCAPE = re.compile('[\\\\"\x00-\x1f\x7f]')


def string_literal(value: str) -> str:
    """``value`` as a double-quoted PromQL string literal that evaluates back to exactly ``value``."""
    return '"' + _TO_ESCAPE.sub(_escaped, value) + '"'


def _escaped(match: re.Match[str]) -> str:
    character = match.group()
    return _SIMPLE_ESCAPES.get(character) or f"\\u{ord(character):04x}"


def regex_escape(value: str) -> str:
    """``value`` as an RE2 pattern matching exactly ``value``: Go's ``regexp.QuoteMeta``, which
    escapes exactly the characters RE2 treats as special outside a character class."""
    return _RE2_SPECIAL.sub(r"\\\g<0>", value)


def regex_alternation(values: Iterable[str]) -> str:
    """An RE2 pattern matching any of ``values`` exactly (Prometheus anchors label regexes).

    Sorted and deduplicated so the same set always gives the same query text. An empty set gives
    a pattern that matches nothing, not even the empty value of a series lacking the label.
    """
    unique = sorted(set(values))
    if not unique:
        return MATCH_NOTHING
    return "|".join(regex_escape(v) for v in unique)


def regex_literal(values: Iterable[str]) -> str:
    """:func:`regex_alternation` as a complete PromQL string literal."""
    return string_literal(regex_alternation(values))


def is_label_name(name: str) -> bool:
    return bool(_LABEL_NAME.match(name))


def sanitize_label_name(name: str) -> str:
    """A Kubernetes label key as Prometheus spells it (``app.kubernetes.io/name`` →
    ``app_kubernetes_io_name``), the convention of kube-state-metrics and relabelling."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "_" + cleaned
    return cleaned


def format_time(t: float) -> str:
    """A Unix time for the API's ``time``/``start``/``end`` (Prometheus keeps milliseconds)."""
    if not math.isfinite(t):
        raise ValueError(f"time must be finite: {t!r}")
    return f"{t:.3f}"


class SelectorError(ValueError):
    """A label selector this module cannot turn into PromQL matchers."""


def selector_matchers(selector: str) -> str:
    """Translate a Kubernetes label selector string (``status.selector`` of the scale
    subresource, e.g. ``app=web,tier in (a,b),!legacy``) into PromQL label matchers
    (``app="web",tier=~"a|b",legacy=""``) to be placed inside ``{…}``.

    Label keys are sanitised as Prometheus exports them; values are escaped. Semantics match:
    ``!=``/``notin`` also match series without the label, as they match pods without it.
    """
    matchers: list[str] = []
    for requirement in _split_requirements(selector):
        matchers.append(_requirement_matcher(requirement))
    return ",".join(matchers)


def _split_requirements(selector: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced parenthesis in selector {selector!r}")
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if depth != 0:
        raise SelectorError(f"unbalanced parenthesis in selector {selector!r}")
    parts.append("".join(current).strip())
    if parts == [""]:
        return []
    if any(not p for p in parts):
        raise SelectorError(f"empty requirement in selector {selector!r}")
    return parts


_SET_REQUIREMENT = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")
_EQUALITY_REQUIREMENT = re.compile(r"^([^=!<>\s]+)\s*(==|=|!=)\s*(\S*)$")
_EXISTS_REQUIREMENT = re.compile(r"^(!?)\s*([^=!<>\s()]+)$")


def _requirement_matcher(requirement: str) -> str:
    match = _SET_REQUIREMENT.match(requirement)
    if match:
        key, operator, raw_values = match.groups()
        values = [v.strip() for v in raw_values.split(",")]
        op = "=~" if operator == "in" else "!~"
        return f"{sanitize_label_name(key)}{op}{regex_literal(values)}"
    match = _EQUALITY_REQUIREMENT.match(requirement)
    if match:
        key, operator, value = match.groups()
        op = "!=" if operator == "!=" else "="
        return f"{sanitize_label_name(key)}{op}{string_literal(value)}"
    match = _EXISTS_REQUIREMENT.match(requirement)
    if match:
        negated, key = match.groups()
        return f'{sanitize_label_name(key)}{"=" if negated else "!="}""'
    raise SelectorError(
        f"cannot express selector requirement {requirement!r} as PromQL label matchers "
        "(supported: =, ==, !=, in, notin, exists, !exists)"
    )
