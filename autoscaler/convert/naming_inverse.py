"""The series behind an API metric name, found by running the adapter's naming rule backwards.

prometheus-adapter names a series forward: ``name.matches`` (a Go regular expression) is matched against
the series name and ``name.as`` is expanded from its groups (``${1}``, ``$name``; Go's ``Regexp.Expand``).
Asked for an API name, the converter inverts that for the patterns people write: literal text around
capture groups, e.g. ``^http_(.*)_total$`` → ``${1}_per_second``, or an alternation such as
``^jvm_threads_(live|peak)_threads$`` → ``jvm_threads_${1}``, which serves ``jvm_threads_live`` and
``jvm_threads_peak``. The ``as`` template is matched against the API name with each referenced group
standing for its own sub-pattern (so ``${1}`` matches only ``live`` or ``peak``), which gives the groups'
values; a group the template does not use is each of its alternatives when it is a list of literals
(``(jvm|go)``), or empty for ``.*``. The pattern's literal text with those values in place is the candidate.

Anything else at the pattern's top level (a class, a quantifier, a top-level ``|``) gives no candidate
rather than a guess; every candidate is still checked forward (:func:`autoscaler.convert.naming.api_name`
must give back exactly the API name).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["inverse_candidates"]

# Candidates made from a rule's alternatives at most (a product of several lists can grow fast).
MAX_CANDIDATES = 64
_SPECIAL = set(".*+?{}[]|^$()")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class _Group:
    """A top-level group of the pattern: its number (None: non-capturing), its name, and its body."""

    number: int | None
    name: str | None
    body: str


_Part = str | _Group


def inverse_candidates(pattern: str, template: str, metric: str) -> Iterator[str]:
    """The series names that ``pattern`` (``name.matches``) with ``template`` (``name.as``, defaulted) could
    name ``metric``, most likely first; none when the pattern or template has a shape this does not read."""
    parts = _top_level(pattern)
    if parts is None:
        return
    groups = [part for part in parts if isinstance(part, _Group)]
    values = _referenced_values(groups, template, metric)
    if values is None:
        return
    choices: list[list[str]] = []
    for part in parts:
        if isinstance(part, str):
            choices.append([part])
        elif part in values:
            choices.append([values[part]])
        else:
            options = _unreferenced_options(part.body)
            if options is None:
                return
            choices.append(options)
    for made in itertools.islice(itertools.product(*choices), MAX_CANDIDATES):
        yield "".join(made)


def _top_level(pattern: str) -> list[_Part] | None:
    """The pattern as literal text and top-level groups (anchors dropped), or None for any other shape."""
    text = pattern.removeprefix("^")
    if text.endswith("$") and not _escaped_at(text, len(text) - 1):
        text = text[:-1]
    parts: list[_Part] = []
    literal: list[str] = []
    number = 0  # capturing groups opened so far, nested ones included (Go numbers them all in order)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            escaped = _escaped_literal(text, i)
            if escaped is None:
                return None
            literal.append(escaped)
            i += 2
        elif ch == "(":
            end = _closing(text, i)
            if end is None or (end + 1 < len(text) and text[end + 1] in "*+?{"):
                return None  # unbalanced, or a quantified group: no single value to invert
            inner = text[i + 1 : end]
            group = _group(inner, number)
            if group is None:
                return None
            if group.number is not None:
                number += 1
            number += _capturing_opens(group.body)
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(group)
            i = end + 1
        elif ch in _SPECIAL:
            return None
        else:
            literal.append(ch)
            i += 1
    if literal:
        parts.append("".join(literal))
    return parts


def _group(inner: str, opened: int) -> _Group | None:
    """A group's kind from its opening (``(?:``, ``(?P<name>``, ``(?<name>``, plain); None for flags."""
    if not inner.startswith("?"):
        return _Group(opened + 1, None, inner)
    if inner.startswith("?:"):
        return _Group(None, None, inner[2:])
    named = re.match(r"\?P?<([A-Za-z_][A-Za-z0-9_]*)>", inner)
    if named is None:
        return None
    return _Group(opened + 1, named.group(1), inner[named.end() :])


def _escaped_literal(text: str, at: int) -> str | None:
    """The character ``\\x`` at ``at`` stands for, if it is a literal (an escaped punctuation mark)."""
    if at + 1 >= len(text):
        return None
    following = text[at + 1]
    return following if not following.isalnum() else None


def _escaped_at(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _closing(text: str, start: int) -> int | None:
    """The index of the parenthesis closing the one at ``start`` (escapes and classes skipped)."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            close = text.find("]", i + 2)  # a "]" first in the class is literal
            if close < 0:
                return None
            i = close + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _capturing_opens(body: str) -> int:
    """How many capturing groups ``body`` opens (they take numbers before the groups after it)."""
    count = 0
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            close = body.find("]", i + 2)
            i = len(body) if close < 0 else close + 1
            continue
        if ch == "(" and (not body.startswith("?", i + 1) or re.match(r"\(\?P?<", body[i:])):
            count += 1
        i += 1
    return count


def template_parts(template: str) -> list[str | tuple[str]]:
    """A Go ``Regexp.Expand`` template (``name.as``) as literal text and group references (a 1-tuple of the
    group's name or number), read as Go reads it: ``$1``, ``${1}``, ``$name``, ``${name}``, ``$$``; ``$name``
    takes the longest run of ASCII letters, digits and underscores. The one reading of that syntax: expanding
    (:func:`autoscaler.convert.naming.go_expand`) and inverting (here) both use it."""
    parts: list[str | tuple[str]] = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch != "$" or i + 1 >= len(template):
            parts.append(ch)
            i += 1
            continue
        following = template[i + 1]
        if following == "$":
            parts.append("$")
            i += 2
        elif following == "{":
            end = template.find("}", i + 2)
            if end < 0:
                parts.append(ch)
                i += 1
                continue
            parts.append((template[i + 2 : end],))
            i = end + 1
        else:
            name = _IDENTIFIER.match(template, i + 1)
            if name is None:
                parts.append(ch)
                i += 1
                continue
            parts.append((name.group(0),))
            i = name.end()
    return parts


def _referenced_values(groups: list[_Group], template: str, metric: str) -> dict[_Group, str] | None:
    """The values of the groups ``template`` uses that make it expand to ``metric``; None when it cannot
    (``$0``, a nested group, a sub-pattern Python's ``re`` does not read)."""
    parts = template_parts(template)
    by_key: dict[str, _Group] = {}
    for group in groups:
        if group.number is not None:
            by_key[str(group.number)] = group
        if group.name is not None:
            by_key[group.name] = group
    regex: list[str] = []
    seen: dict[_Group, str] = {}
    for part in parts:
        if isinstance(part, str):
            regex.append(re.escape(part))
            continue
        key = part[0]
        if key == "0" or (key.isdigit() and key not in by_key and int(key) <= _total_groups(groups)):
            return None  # the whole match, or a nested group: not read backwards here
        referenced = by_key.get(key)
        if referenced is None:
            continue  # no such group: Go expands it to nothing
        if referenced in seen:
            regex.append(f"(?P={seen[referenced]})")
        else:
            seen[referenced] = f"g{len(seen)}"
            regex.append(f"(?P<{seen[referenced]}>{referenced.body})")
    try:
        found = re.fullmatch("".join(regex), metric)
    except re.error:
        return None
    if found is None:
        return None
    return {group: found.group(name) for group, name in seen.items()}


def _total_groups(groups: list[_Group]) -> int:
    return sum((g.number is not None) + _capturing_opens(g.body) for g in groups)


def _unreferenced_options(body: str) -> list[str] | None:
    """The values a group the template does not use may have: each alternative of a list of literals, or ""
    for ``.*``; None otherwise."""
    if body in (".*", ".*?"):
        return [""]
    options = []
    for alternative in body.split("|"):
        parts = _top_level(f"^{alternative}$")
        if parts is None or any(not isinstance(p, str) for p in parts):
            return None
        options.append("".join(p for p in parts if isinstance(p, str)))
    return options
