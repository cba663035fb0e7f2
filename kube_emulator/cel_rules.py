"""A custom resource's CEL validation rules (``x-kubernetes-validations``), evaluated as the API server does.

Each schema node's rules are compiled once (per served version's schema object, held with it) by
cel-python, a pure-Python implementation of the Common Expression Language. On a write they are evaluated
against the node's value after the OpenAPI validation (:mod:`kube_emulator.structural`), as the
real custom-resource strategy does:

* ``self`` is the node's value; ``oldSelf`` the stored object's value at the same path on an update.
  A rule that names ``oldSelf`` (a transition rule) is evaluated on updates only, and not under list items
  (the emulator correlates no list item with its old self, as the server does for atomic lists);
* a rule that is false is a cause of the 422 Invalid at the node's path, or at the node's path joined
  with the rule's ``fieldPath``, saying the rule's ``message`` (``failed rule: <rule>`` without one), of
  the rule's ``reason`` (``FieldValueInvalid`` by default: ``Invalid value: "object": <message>``, the
  value shown being the node's schema type, empty for an int-or-string);
* a rule that fails to evaluate (a missing field read without ``has()``) is a cause too, as upstream's;
* after a type error or a value outside an ``enum`` no rule is evaluated: one cause says so (upstream's
  ``hasBlockingErr``).

Not done: ``messageExpression``, the cost limits, Kubernetes' CEL libraries (``quantity()``, ``url()``…;
such a rule fails to evaluate here), list correlation by ``x-kubernetes-list-map-keys``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import celpy  # type: ignore[import-untyped,unused-ignore]
from celpy import celtypes  # type: ignore[import-untyped,unused-ignore]
from celpy.adapter import json_to_cel  # type: ignore[import-untyped,unused-ignore]

from kube_emulator.errors import DUPLICATE, FORBIDDEN, INVALID, NOT_SUPPORTED, REQUIRED, TYPE_INVALID, FieldError
from kube_emulator.jsonutil import JsonObject

VALIDATIONS = "x-kubernetes-validations"
_REASONS = frozenset({INVALID, FORBIDDEN, REQUIRED, DUPLICATE})
# The OpenAPI validation's errors after which no rule is evaluated (a rule could not rely on a field's type or
# enum): upstream's hasBlockingErr.
_BLOCKING = frozenset({TYPE_INVALID, NOT_SUPPORTED})
_OLD_SELF = re.compile(r"\boldSelf\b")
_FIELD_PATH = re.compile(r"^(\.[A-Za-z_][A-Za-z0-9_]*|\['[^']*'\]|\[[0-9]+\])+$")
NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """One ``x-kubernetes-validations`` entry, compiled."""

    rule: str
    program: Any
    message: str
    field_path: str
    reason: str
    transition: bool


class RuleError(ValueError):
    """A rule that does not compile, or an entry that is not one (the CRD is refused): where, and why."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where = where
        self.why = why


_ENVIRONMENT = celpy.Environment()


def compile_rules(schema: JsonObject) -> list[CompiledRule]:
    """The rules of one schema node, compiled; :class:`RuleError` names the first bad one."""
    compiled: list[CompiledRule] = []
    entries = schema.get(VALIDATIONS) or []
    if not isinstance(entries, list):
        raise RuleError("", "must be a list of rules")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str) or not entry["rule"].strip():
            raise RuleError(f"[{index}].rule", "a rule is required")
        rule = entry["rule"]
        reason = str(entry.get("reason") or INVALID)
        if reason not in _REASONS:
            raise RuleError(f"[{index}].reason", f"unsupported reason {reason!r}")
        field_path = str(entry.get("fieldPath") or "")
        if field_path and not _FIELD_PATH.match(field_path):
            raise RuleError(f"[{index}].fieldPath", f"{field_path!r} is not a JSON path into the schema")
        try:
            program = _ENVIRONMENT.program(_ENVIRONMENT.compile(rule))
        except Exception as problem:  # cel-python's parse errors carry the position in their text
            raise RuleError(f"[{index}].rule", f"compilation failed: {problem}") from problem
        message = str(entry.get("message") or f"failed rule: {rule}")
        compiled.append(
            CompiledRule(rule, program, message, field_path, reason, transition=bool(_OLD_SELF.search(rule)))
        )
    return compiled


def compile_problems(schema: Any, path: str) -> list[tuple[str, str]]:
    """Every rule of ``schema`` (a whole OpenAPI schema) that does not compile: its schema path, and why."""
    problems: list[tuple[str, str]] = []
    if not isinstance(schema, dict):
        return problems
    try:
        compile_rules(schema)
    except RuleError as problem:
        problems.append((f"{path}.{VALIDATIONS}{problem.where}", problem.why))
    for key in ("properties", "additionalProperties", "items"):
        child = schema.get(key)
        if key == "properties" and isinstance(child, dict):
            for name, sub in child.items():
                problems += compile_problems(sub, f"{path}.properties[{name}]")
        elif isinstance(child, dict):
            problems += compile_problems(child, f"{path}.{key}")
    return problems


# Per schema object (a served version keeps its schema for its lifetime; held with its entry, so an id is
# never reused while cached): the node ids that have rules at or under them, and each node's rules.
_PLANS: dict[int, tuple[JsonObject, frozenset[int], dict[int, list[CompiledRule]]]] = {}


def _plan(schema: JsonObject) -> tuple[frozenset[int], dict[int, list[CompiledRule]]]:
    cached = _PLANS.get(id(schema))
    if cached is None or cached[0] is not schema:
        if len(_PLANS) > 256:  # CRDs replaced many times over: start afresh
            _PLANS.clear()
        with_rules: set[int] = set()
        rules: dict[int, list[CompiledRule]] = {}
        _scan(schema, with_rules, rules)
        cached = _PLANS[id(schema)] = (schema, frozenset(with_rules), rules)
    return cached[1], cached[2]


def _scan(node: Any, with_rules: set[int], rules: dict[int, list[CompiledRule]]) -> bool:
    if not isinstance(node, dict):
        return False
    found = False
    if node.get(VALIDATIONS):
        try:
            rules[id(node)] = compile_rules(node)
            found = True
        except RuleError:  # refused when the CRD was written; one stored before is left unenforced
            pass
    for key in ("properties", "additionalProperties", "items"):
        child = node.get(key)
        children = child.values() if key == "properties" and isinstance(child, dict) else [child]
        for sub in children:
            found = _scan(sub, with_rules, rules) or found
    if found:
        with_rules.add(id(node))
    return found


def validate(
    obj: JsonObject,
    schema: JsonObject,
    old: JsonObject | None,
    earlier: list[FieldError],
    *,
    unchanged: frozenset[str] = frozenset(),
) -> list[FieldError]:
    """The causes ``obj``'s rules give; ``earlier``: the OpenAPI validation's (a type error among them stops
    the rules). ``unchanged``: top-level fields an update left as they were (their rules held before)."""
    with_rules, rules = _plan(schema)
    if id(schema) not in with_rules:
        return []
    if any(cause.type in _BLOCKING for cause in earlier):
        return [FieldError(INVALID, "<nil>", None, NOT_CHECKED)]
    causes: list[FieldError] = []
    properties = schema.get("properties") or {}
    for key, value in obj.items():
        child = properties.get(key)
        if key in unchanged or not isinstance(child, dict):
            continue
        previous = old.get(key) if isinstance(old, dict) else None
        _walk(value, child, key, previous, old is not None and key in old, with_rules, rules, causes)
    for rule in rules.get(id(schema), []):
        _evaluate(rule, obj, old, old is not None, schema, "", causes)
    return causes


def _walk(
    value: Any,
    schema: JsonObject,
    path: str,
    old: Any,
    has_old: bool,
    with_rules: frozenset[int],
    rules: dict[int, list[CompiledRule]],
    causes: list[FieldError],
) -> None:
    if id(schema) not in with_rules:
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key, additional)
            if isinstance(child, dict):
                present = has_old and isinstance(old, dict) and key in old
                previous = old.get(key) if present else None
                _walk(item, child, f"{path}.{key}", previous, present, with_rules, rules, causes)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{index}]", None, False, with_rules, rules, causes)
    for rule in rules.get(id(schema), []):
        _evaluate(rule, value, old, has_old, schema, path, causes)


def _evaluate(
    rule: CompiledRule, value: Any, old: Any, has_old: bool, schema: JsonObject, path: str, causes: list[FieldError]
) -> None:
    if value is None or (rule.transition and not has_old):
        return
    activation = {"self": json_to_cel(value)}
    if rule.transition:
        activation["oldSelf"] = json_to_cel(old)
    shown = _schema_type(schema)
    try:
        result = rule.program.evaluate(activation)
    except Exception as problem:  # an evaluation error (no such key, no such overload) is the rule failing
        causes.append(FieldError(INVALID, path, shown, f"rule evaluation error: {problem}"))
        return
    if isinstance(result, celtypes.BoolType) and bool(result):
        return
    if not isinstance(result, celtypes.BoolType):
        causes.append(FieldError(INVALID, path, shown, f"rule evaluation error: {result}"))
        return
    field = _join(path, rule.field_path)
    if rule.reason in (REQUIRED, FORBIDDEN):
        causes.append(FieldError(rule.reason, field, detail=rule.message))
    else:
        causes.append(FieldError(rule.reason, field, shown, rule.message))


def _schema_type(schema: JsonObject) -> str:
    """The value a false rule's cause shows: the node's schema type, as upstream's (``sts.Type``), which is
    empty for an int-or-string (``anyOf`` integer or string, no type of its own)."""
    declared = schema.get("type")
    return declared if isinstance(declared, str) else ""


def _join(path: str, field_path: str) -> str:
    """The node's path with a rule's ``fieldPath`` (``.a.b``, ``['a.b']``, ``[0]``) appended."""
    if not field_path:
        return path
    text = re.sub(r"\['([^']*)'\]", r".\1", field_path)
    return (path + text).lstrip(".")
