"""The emulator's own label selectors, as ``k8s.io/apimachinery/pkg/labels`` parses and matches them.

The emulator judges the product (whose selectors live in :mod:`autoscaler.kube.labels`), so it shares no
code with it: this is a separate implementation of the same lexer, recursive-descent parser,
requirement checks (``NewRequirement``) and ``String()`` rendering, following the upstream grammar::

    <selector>    ::= <requirement> | <requirement> "," <selector>
    <requirement> ::= [!] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | ">" | "<") VALUE ]

Notable upstream behaviours kept: ``in``/``notin`` are identifiers inside a value set (``x in (in)``);
``x in ()`` means the empty value; ``x=`` selects the empty value; requirements are sorted by key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kube_emulator.govalues import quote


class LabelSelectorError(ValueError):
    """Not a label selector; the message is the one the API server would give."""


_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = {
    ")": "CLOSE",
    ",": "COMMA",
    "!": "NOT",
    "==": "DOUBLE_EQUALS",
    "=": "EQUALS",
    ">": "GREATER",
    "<": "LESS",
    "!=": "NOT_EQUALS",
    "(": "OPEN",
}
_KEYWORDS = {"in": "IN", "notin": "NOTIN"}
_BINARY = {
    "IN": "in",
    "NOTIN": "notin",
    "EQUALS": "=",
    "DOUBLE_EQUALS": "==",
    "NOT_EQUALS": "!=",
    "GREATER": "gt",
    "LESS": "lt",
}
_BINARY_LIST = "in, notin, =, ==, !=, gt, lt"

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while True:
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        if position >= len(text):
            tokens.append(_Token("END", ""))
            return tokens
        if text[position] in _SPECIAL:
            # The longest run of special characters that is a symbol (so "!=" wins over "!").
            best: _Token | None = None
            end = position
            while end < len(text) and text[end] in _SPECIAL:
                candidate = text[position : end + 1]
                if candidate in _SYMBOLS:
                    best = _Token(_SYMBOLS[candidate], candidate)
                elif best is not None:
                    break
                end += 1
            if best is None:
                tokens.append(_Token("ERROR", f"error expected: keyword found '{text[position:end]}'"))
                position = end
            else:
                tokens.append(best)
                position += len(best.text)
            continue
        end = position
        while end < len(text) and text[end] not in _SPECIAL and text[end] not in _WHITESPACE:
            end += 1
        word = text[position:end]
        tokens.append(_Token(_KEYWORDS.get(word, "IDENTIFIER"), word))
        position = end


def _key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return None


def _value_problem(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _VALUE.fullmatch(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    """``in``, ``notin``, ``=``, ``==``, ``!=``, ``gt``, ``lt``, ``exists`` or ``!``."""
    values: tuple[str, ...] = ()

    @classmethod
    def checked(cls, key: str, operator: str, values: Sequence[str]) -> Requirement:
        """``NewRequirement``: every problem with the key, operator and values, as one error."""
        problems: list[str] = []
        key_problem = _key_problem(key)
        if key_problem:
            problems.append(f"key: Invalid value: {quote(key)}: {key_problem}")
        if operator in ("in", "notin") and not values:
            problems.append("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty")
        elif operator in ("=", "==", "!=") and len(values) != 1:
            problems.append("values: Invalid value: exact-match compatibility requires one single value")
        elif operator in ("exists", "!") and values:
            problems.append("values: Invalid value: values set must be empty for exists and does not exist")
        elif operator in ("gt", "lt"):
            if len(values) != 1:
                problems.append("values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required")
            problems += [
                f"values[{index}]: Invalid value: {quote(value)}: "
                "for 'Gt', 'Lt' operators, the value must be an integer"
                for index, value in enumerate(values)
                if not _INTEGER.fullmatch(value)
            ]
        for index, value in enumerate(values):
            value_problem = _value_problem(value)
            if value_problem:
                problems.append(f"values[{index}][{key}]: Invalid value: {quote(value)}: {value_problem}")
        if problems:
            raise LabelSelectorError(problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")
        return cls(key, operator, tuple(values))

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator in ("in", "=", "=="):
            return present and labels[self.key] in self.values
        if self.operator in ("notin", "!="):
            return not present or labels[self.key] not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if not present or not _INTEGER.fullmatch(labels[self.key]):
            return False
        have, bound = int(labels[self.key]), int(self.values[0])
        return have > bound if self.operator == "gt" else have < bound

    def __str__(self) -> str:
        if self.operator == "exists":
            return self.key
        if self.operator == "!":
            return f"!{self.key}"
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if self.operator in ("in", "notin"):
            return f"{self.key} {self.operator} ({values})"
        symbol = {"gt": ">", "lt": "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{values}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """Requirements sorted by key; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        present = labels or {}
        return all(requirement.matches(present) for requirement in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements

    def indexable(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """``(key, allowed values)`` for the requirements a label index answers (``=``, ``==``, ``in``)."""
        for requirement in self.requirements:
            if requirement.operator in ("in", "=", "=="):
                yield requirement.key, requirement.values

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = LabelSelector()


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.position = 0

    def peek(self, values: bool = True) -> _Token:
        token = self.tokens[self.position]
        # Inside values "in" and "notin" are plain words.
        return _Token("IDENTIFIER", token.text) if values and token.kind in ("IN", "NOTIN") else token

    def take(self, values: bool = True) -> _Token:
        token = self.peek(values)
        self.position += 1
        return token

    def selector(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token = self.peek()
            if token.kind == "END":
                return requirements
            if token.kind not in ("IDENTIFIER", "NOT"):
                raise LabelSelectorError(f"found '{token.text}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self.requirement())
            except LabelSelectorError as problem:
                raise LabelSelectorError(f"unable to parse requirement: {problem}") from None
            after = self.take()
            if after.kind == "END":
                return requirements
            if after.kind != "COMMA":
                raise LabelSelectorError(f"found '{after.text}', expected: ',' or 'end of string'")
            following = self.peek()
            if following.kind not in ("IDENTIFIER", "NOT"):
                raise LabelSelectorError(f"found '{following.text}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        token = self.take()
        negated = token.kind == "NOT"
        if negated:
            token = self.take()
        if token.kind != "IDENTIFIER":
            raise LabelSelectorError(f"found '{token.text}', expected: identifier")
        key = token.text
        problem = _key_problem(key)
        if problem:
            raise LabelSelectorError(f"key: Invalid value: {quote(key)}: {problem}")
        if negated:
            return Requirement.checked(key, "!", [])  # whatever follows is the caller's to reject
        if self.peek().kind in ("END", "COMMA"):
            return Requirement.checked(key, "exists", [])
        operator_token = self.take(values=False)
        operator = _BINARY.get(operator_token.kind)
        if operator is None:
            raise LabelSelectorError(f"found '{operator_token.text}', expected: {_BINARY_LIST}")
        values = self.value_set() if operator in ("in", "notin") else self.exact_value()
        return Requirement.checked(key, operator, sorted(set(values)))

    def value_set(self) -> list[str]:
        opening = self.take()
        if opening.kind != "OPEN":
            raise LabelSelectorError(f"found '{opening.text}' expected: '('")
        first = self.peek()
        if first.kind == "CLOSE":
            self.take()
            return [""]
        if first.kind not in ("IDENTIFIER", "COMMA"):
            raise LabelSelectorError(f"found '{first.text}', expected: ',', ')' or identifier")
        values = self.identifiers()
        closing = self.take()
        if closing.kind != "CLOSE":
            raise LabelSelectorError(f"found '{first.text}', expected: ')'")
        return values

    def identifiers(self) -> list[str]:
        values: list[str] = []
        while True:
            token = self.take()
            if token.kind == "IDENTIFIER":
                values.append(token.text)
                following = self.peek()
                if following.kind == "COMMA":
                    continue
                if following.kind == "CLOSE":
                    return values
                raise LabelSelectorError(f"found '{following.text}', expected: ',' or ')'")
            if token.kind != "COMMA":
                raise LabelSelectorError(f"found '{token.text}', expected: ',', or identifier")
            if not values:
                values.append("")  # "(,"
            if self.peek().kind in ("CLOSE", "COMMA"):
                values.append("")  # ",)" and ",,"
                if self.peek().kind == "CLOSE":
                    return values

    def exact_value(self) -> list[str]:
        if self.peek().kind in ("END", "COMMA"):
            return [""]
        token = self.take()
        if token.kind != "IDENTIFIER":
            raise LabelSelectorError(f"found '{token.text}', expected: identifier")
        return [token.text]


def parse_label_selector(text: str | None) -> LabelSelector:
    """``labels.Parse``: ``app=web,tier in (a,b),!canary``; empty or missing matches everything."""
    if text is None:
        return EVERYTHING
    requirements = _Parser(text).selector()
    return LabelSelector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


_EXPRESSION_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def selector_from_label_selector(label_selector: Mapping[str, Any] | None) -> LabelSelector | None:
    """``metav1.LabelSelectorAsSelector``: ``None`` selects nothing, ``{}`` everything; a malformed
    expression raises :class:`LabelSelectorError`."""
    if label_selector is None:
        return None
    requirements = [
        Requirement.checked(str(key), "=", [str(value)])
        for key, value in (label_selector.get("matchLabels") or {}).items()
    ]
    for expression in label_selector.get("matchExpressions") or []:
        operator = _EXPRESSION_OPERATORS.get(str(expression.get("operator")))
        if operator is None:
            raise LabelSelectorError(f"{quote(str(expression.get('operator')))} is not a valid label selector operator")
        values = [str(value) for value in expression.get("values") or []]
        requirements.append(Requirement.checked(str(expression.get("key")), operator, values))
    return LabelSelector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))
