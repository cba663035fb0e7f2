"""Label selectors, with the syntax and semantics of ``k8s.io/apimachinery/pkg/labels``.

Label selectors accept the full set-based grammar (``=``, ``==``, ``!=``, ``in``, ``notin``,
``key``, ``!key``, and the rarely used ``>``/``<``). :func:`selector_from_label_selector`
renders a ``LabelSelector`` (matchLabels/matchExpressions) the way
``metav1.LabelSelectorAsSelector(...).String()`` does, which is what a ``Scale``'s
``status.selector`` carries.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class SelectorError(ValueError):
    """The text is not a label selector (the message says why, in apimachinery's words)."""


_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class Operator(StrEnum):
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
            return self.key in labels and labels[self.key] in self.values
        if op in (Operator.NOT_EQUALS, Operator.NOT_IN):
            return self.key not in labels or labels[self.key] not in self.values
        if op is Operator.EXISTS:
            return self.key in labels
        if op is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        if self.key not in labels:
            return False
        try:
            have, bound = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > bound if op is Operator.GREATER_THAN else have < bound

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {op.value} ({','.join(sorted(self.values))})"
        if op is Operator.GREATER_THAN:
            return f"{self.key}>{self.values[0]}"
        if op is Operator.LESS_THAN:
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{op.value}{self.values[0]}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        present = labels or {}
        return all(requirement.matches(present) for requirement in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements

    def indexable(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """``(key, allowed values)`` for requirements a label index can answer (=, ==, in)."""
        for requirement in self.requirements:
            if requirement.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
                yield requirement.key, requirement.values

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = LabelSelector()


# --- label selector string parsing ----------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|!|\(|\)|,|<|>)|(?P<word>[^\s!=(),<>]+))")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:  # pragma: no cover - the pattern accepts every character class
            raise _parse_error(text, f"unexpected character at {position}")
        tokens.append(match.group("op") or match.group("word"))
        position = match.end()
    return tokens


def _parse_error(text: str, why: str) -> SelectorError:
    return SelectorError(f"unable to parse requirement: {why} in label selector {text!r}")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``app=web,tier in (a,b),!canary``; an empty or missing string matches everything."""
    if text is None or text.strip() == "":
        return EVERYTHING
    tokens = _tokenize(text)
    requirements: list[Requirement] = []
    position = 0

    def peek(offset: int = 0) -> str | None:
        index = position + offset
        return tokens[index] if index < len(tokens) else None

    while True:
        negated = peek() == "!"
        if negated:
            position += 1
        key = peek()
        if key is None or key in ("=", "==", "!=", "(", ")", ",", "<", ">", "!"):
            raise _parse_error(text, f"found {key!r}, expected a key")
        _validate_key(key, text)
        position += 1
        following = peek()
        if negated:
            if following not in (None, ","):
                raise _parse_error(text, f"found {following!r}, expected ',' or end after !{key}")
            requirements.append(Requirement(key, Operator.DOES_NOT_EXIST))
        elif following in (None, ","):
            requirements.append(Requirement(key, Operator.EXISTS))
        elif following in ("=", "==", "!="):
            position += 1
            value = peek()
            if value in (None, ","):
                value = ""  # ``key=`` selects the empty value
            elif value in ("=", "==", "!=", "(", ")", "<", ">", "!"):
                raise _parse_error(text, f"found {value!r}, expected a value")
            else:
                position += 1
            _validate_value(value, text)
            operator = {"=": Operator.EQUALS, "==": Operator.DOUBLE_EQUALS, "!=": Operator.NOT_EQUALS}[following]
            requirements.append(Requirement(key, operator, (value,)))
        elif following in ("<", ">"):
            position += 1
            value = peek()
            if value is None or not re.fullmatch(r"-?\d+", value):
                raise _parse_error(text, f"for '{following}' the value must be an integer, found {value!r}")
            position += 1
            operator = Operator.GREATER_THAN if following == ">" else Operator.LESS_THAN
            requirements.append(Requirement(key, operator, (value,)))
        elif following in ("in", "notin"):
            position += 1
            if peek() != "(":
                raise _parse_error(text, f"found {peek()!r}, expected '('")
            position += 1
            inside: list[str] = []
            while peek() != ")":
                token = peek()
                if token is None:
                    raise _parse_error(text, "missing ')'")
                if token in ("(", "=", "==", "!=", "!", "<", ">"):
                    raise _parse_error(text, f"found {token!r} in a value set")
                inside.append(token)
                position += 1
            position += 1
            values = _split_value_set(inside, text)
            if not values:
                raise _parse_error(text, f"for '{following}', 'notin' operators, values set can't be empty")
            operator = Operator.IN if following == "in" else Operator.NOT_IN
            requirements.append(Requirement(key, operator, tuple(dict.fromkeys(values))))
        else:
            raise _parse_error(text, f"found {following!r}, expected an operator")
        after = peek()
        if after is None:
            break
        if after != ",":
            raise _parse_error(text, f"found {after!r}, expected ','")
        position += 1
    return LabelSelector(tuple(requirements))


def _split_value_set(tokens: list[str], text: str) -> list[str]:
    """``a , , b`` → ``["a", "", "b"]``: values are separated by commas and may be empty."""
    if not tokens:
        return []
    values: list[str] = []
    current: str | None = None
    for token in tokens:
        if token == ",":
            values.append(current or "")
            current = None
        elif current is not None:
            raise _parse_error(text, f"found {token!r}, expected ','")
        else:
            _validate_value(token, text)
            current = token
    values.append(current or "")
    return values


def _validate_key(key: str, text: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise _parse_error(text, f"invalid label key prefix {prefix!r}")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        raise _parse_error(text, f"invalid label key {key!r}")


def _validate_value(value: str, text: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise _parse_error(text, f"invalid label value {value!r}")


# --- single keys, values and names, as apimachinery's validation words them --------------------------


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not a label key (``validation.IsQualifiedName``), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return (
            "the prefix before '/' must be a DNS subdomain: lowercase letters, digits, '-' and '.', "
            "at most 253 characters (e.g. 'example.com')"
        )
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return (
            "the name must be at most 63 characters: letters, digits, '-', '_' and '.', beginning and "
            "ending with a letter or digit (e.g. 'MyName', 'my.name', '123-abc'), with an optional "
            "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a label value (``validation.IsValidLabelValue``), or None."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        return (
            "must be at most 63 characters: letters, digits, '-', '_' and '.', beginning and ending with a "
            "letter or digit (e.g. 'MyValue', 'my_value', '12345')"
        )
    return None


def dns_subdomain_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS subdomain (the names of most objects, a Lease's among them), or None."""
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return (
            "must be at most 253 characters: lowercase letters, digits, '-' and '.', beginning and ending "
            "with a letter or digit"
        )
    return None


# --- LabelSelector objects (matchLabels / matchExpressions) -----------------------------------------

_EXPRESSION_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_label_selector(label_selector: Mapping[str, Any] | None) -> LabelSelector | None:
    """``metav1.LabelSelectorAsSelector``: ``None`` selects nothing, ``{}`` selects everything.

    Raises ``ValueError`` for malformed expressions (callers turn that into 422).
    """
    if label_selector is None:
        return None
    match_labels, expressions = _shape(label_selector)
    requirements: list[Requirement] = []
    for key, value in sorted(match_labels.items()):
        requirements.append(Requirement(str(key), Operator.EQUALS, (str(value),)))
    for expression in expressions:
        operator = _EXPRESSION_OPERATORS.get(str(expression.get("operator")))
        if operator is None:
            raise ValueError(f"{expression.get('operator')!r} is not a valid label selector operator")
        raw_values = expression.get("values") or []
        if not isinstance(raw_values, list):
            raise ValueError("the values of a label selector expression must be a list")
        values = tuple(str(v) for v in raw_values)
        if operator in (Operator.IN, Operator.NOT_IN) and not values:
            raise ValueError("for 'in', 'notin' operators, values set can't be empty")
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
            raise ValueError("values set must be empty for exists and does not exist")
        requirements.append(Requirement(str(expression.get("key")), operator, values))
    # LabelSelectorAsSelector adds requirements to an internal selector, which sorts them by key.
    requirements.sort(key=lambda requirement: requirement.key)
    return LabelSelector(tuple(requirements))


def _shape(label_selector: object) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
    """``matchLabels`` and ``matchExpressions``; ValueError when a part is not what the API defines."""
    if not isinstance(label_selector, Mapping):
        raise ValueError("a label selector must be an object")
    match_labels = label_selector.get("matchLabels") or {}
    expressions = label_selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise ValueError("matchLabels must be an object")
    if not isinstance(expressions, list) or not all(isinstance(e, Mapping) for e in expressions):
        raise ValueError("matchExpressions must be a list of objects")
    return match_labels, expressions
