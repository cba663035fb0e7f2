"""Field selectors, and label selectors (:mod:`kube_emulator.labels`) failing as the API server does.

A label selector that does not parse is a 400 Bad Request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kube_emulator import labels as _labels
from kube_emulator.errors import bad_request
from kube_emulator.labels import (
    EVERYTHING,
    LabelSelector,
    LabelSelectorError,
    Requirement,
    selector_from_label_selector,
)

__all__ = [
    "EVERYTHING",
    "FieldSelector",
    "LabelSelector",
    "LabelSelectorError",
    "Requirement",
    "field_value",
    "parse_field_selector",
    "parse_label_selector",
    "selector_from_label_selector",
]


def parse_label_selector(text: str | None) -> LabelSelector:
    """:func:`kube_emulator.labels.parse_label_selector`, failing as the API server does (400)."""
    try:
        return _labels.parse_label_selector(text)
    except LabelSelectorError as problem:
        raise bad_request(str(problem)) from problem


# --- field selectors ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    value: str
    negated: bool

    def matches(self, fields: Callable[[str], str]) -> bool:
        return (fields(self.field) == self.value) != self.negated


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Callable[[str], str]) -> bool:
        return all(requirement.matches(fields) for requirement in self.requirements)

    def fields(self) -> set[str]:
        return {requirement.field for requirement in self.requirements}

    def exact(self, field: str) -> str | None:
        """The value a positive ``field=value`` requirement pins, if any (lets lookups skip scans)."""
        for requirement in self.requirements:
            if requirement.field == field and not requirement.negated:
                return requirement.value
        return None


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse ``metadata.name=web,status.phase!=Running`` (values may escape ``\\,`` ``\\=``)."""
    if text is None or text.strip() == "":
        return FieldSelector()
    requirements: list[FieldRequirement] = []
    for term in _split_unescaped(text, ","):
        match = re.fullmatch(r"\s*([^=!\s]+)\s*(==|!=|=)(.*)", term)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field, operator, raw_value = match.groups()
        requirements.append(FieldRequirement(field, _unescape(raw_value.strip()), operator == "!="))
    return FieldSelector(tuple(requirements))


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The string a field selector compares against (missing fields compare as ``""``)."""
    if field == "source":  # core/v1 Events select ``source`` by its component
        value: Any = (obj.get("source") or {}).get("component")
    else:
        value = obj
        for step in field.split("."):
            value = value.get(step) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
