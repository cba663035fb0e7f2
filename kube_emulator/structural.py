"""A custom resource's structural schema, applied to what is written as the API server applies it.

In the order of the real custom-resource handler:

1. **pruning** — fields the schema does not specify are dropped, except under
   ``x-kubernetes-preserve-unknown-fields: true`` (and ``apiVersion``/``kind``/``metadata`` of the object and
   of ``x-kubernetes-embedded-resource`` values). With ``fieldValidation=Strict`` (what kubectl sends) a
   dropped field is a 400 instead; with ``Warn`` (the server's default) a warning;
2. **defaulting** — ``default`` values fill missing properties;
3. **numbers** — whole floats (``1.0``) become integers, as the server's float64 is stored (``1``) and
   taken for ``type: integer``;
4. **validation** — the OpenAPI v3 constraints (types, ``enum``, ``required``, ``minimum``/``maximum``, lengths,
   patterns, item counts, junctors), by ``jsonschema`` (OpenAPI 3.0's keywords are draft 4's: boolean
   ``exclusiveMinimum``), each error turned into the ``field.Error`` kube-openapi's would become.

CEL rules (``x-kubernetes-validations``) and ``format`` checks are not evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import fastjsonschema  # type: ignore[import-untyped,unused-ignore]
import jsonschema  # type: ignore[import-untyped,unused-ignore]

from kube_emulator.errors import (
    INVALID,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    FieldError,
    not_supported,
    required,
)
from kube_emulator.govalues import go_float, quote
from kube_emulator.jsonutil import JsonObject, clone

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
INT_OR_STRING = "x-kubernetes-int-or-string"
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)


# --- pruning ----------------------------------------------------------------------------------------


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune(obj: JsonObject, schema: JsonObject) -> list[str]:
    """Drop what ``schema`` does not specify from ``obj`` (a private copy); the paths of what was dropped."""
    dropped: list[str] = []
    _prune_object(obj, schema, "", dropped, root=True)
    return dropped


def _prune_object(obj: JsonObject, schema: JsonObject, path: str, dropped: list[str], *, root: bool) -> None:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    keep_meta = root or bool(schema.get(EMBEDDED))
    for key in list(obj):
        if keep_meta and key in ("apiVersion", "kind"):
            continue
        if keep_meta and key == "metadata":
            if isinstance(obj[key], dict):
                for meta_key in [name for name in obj[key] if name not in _OBJECT_META_FIELDS]:
                    del obj[key][meta_key]
                    dropped.append(_child(_child(path, "metadata"), meta_key))
            continue
        if key in properties:
            _prune_value(obj[key], properties[key], _child(path, key), dropped)
        elif isinstance(additional, dict):
            _prune_value(obj[key], additional, _child(path, key), dropped)
        elif not schema.get(PRESERVE) and additional is not True:
            del obj[key]
            dropped.append(_child(path, key))


def _prune_value(value: Any, schema: JsonObject, path: str, dropped: list[str]) -> None:
    # As upstream: a map is pruned against its schema whatever type the schema says (a type error follows).
    if isinstance(value, dict):
        _prune_object(value, schema, path, dropped, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _prune_value(item, schema["items"], f"{path}[{index}]", dropped)


# --- defaulting -------------------------------------------------------------------------------------


# The largest integral float kube-openapi takes for ``type: integer`` (swag.IsFloat64AJSONInteger: ±2^53).
_JSON_INTEGER = float(2**53)


def go_numbers(value: Any) -> Any:
    """``value`` with its integral floats as the real server keeps them: it decodes a number with a
    fraction or an exponent (``1.0``) into a float64, takes such a float for ``type: integer`` when it
    is whole (kube-openapi's typeValidator, up to ±2^53) and stores float64(1) as ``1``. Without this a
    ``replicas: 1.0`` the real server accepts (and returns as 1) was refused as not an integer."""
    if type(value) is float:
        return int(value) if value.is_integer() and abs(value) <= _JSON_INTEGER else value
    if type(value) is dict:
        for key, item in value.items():
            if type(item) in (float, dict, list):
                value[key] = go_numbers(item)
    elif type(value) is list:
        for index, item in enumerate(value):
            if type(item) in (float, dict, list):
                value[index] = go_numbers(item)
    return value


def apply_defaults(value: Any, schema: JsonObject) -> None:
    """Fill missing properties that have a ``default`` (in place, ``value`` being a private copy)."""
    if isinstance(value, dict):
        for key, child in (schema.get("properties") or {}).items():
            if key not in value and "default" in child:
                value[key] = clone(child["default"])
            if key in value:
                apply_defaults(value[key], child)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in value:
                if key not in (schema.get("properties") or {}):
                    apply_defaults(value[key], additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(item, schema["items"])


# --- validation -------------------------------------------------------------------------------------


def _as_json_schema(schema: Any) -> Any:
    """The OpenAPI schema as draft-4 JSON Schema: int-or-string and nullable become type lists."""
    if isinstance(schema, list):
        return [_as_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {
        key: _as_json_schema(value)
        for key, value in schema.items()
        if not key.startswith("x-kubernetes-") and key not in ("format", "nullable", "default", "example")
    }
    if schema.get(INT_OR_STRING):
        converted["type"] = ["integer", "string"]
    if schema.get("nullable") and "type" in converted:
        types = converted["type"] if isinstance(converted["type"], list) else [converted["type"]]
        converted["type"] = [*types, "null"]
        if "enum" in converted:
            converted["enum"] = [*converted["enum"], None]
    if isinstance(schema.get("properties"), dict):
        converted["properties"] = {name: _as_json_schema(child) for name, child in schema["properties"].items()}
    return converted


_VALIDATORS: dict[int, tuple[JsonObject, Any, Callable[[Any], Any] | None]] = {}


def _validators(schema: JsonObject) -> tuple[Any, Callable[[Any], Any] | None]:
    """The validators of a schema object, one pair per object (a served version keeps its schema for its
    lifetime; the schema is held with them, so its id cannot be reused by another): ``jsonschema``'s,
    which names every problem, and ``fastjsonschema``'s, the same rules compiled to Python (~30 times
    faster, draft 4 too, formats off as in the other), which only tells whether there is one: a valid
    object, nearly every write, is found valid by it alone. (None where it cannot compile the schema.)
    A benchmark's 10,000 status writes spent half of the emulator's write time in ``jsonschema``."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        if len(_VALIDATORS) > 256:  # CRDs replaced many times over: start afresh
            _VALIDATORS.clear()
        converted = _as_json_schema(schema)
        try:
            # Draft 4 named: without "$schema" it compiles draft 7's rules (1.0 an integer, for one).
            draft_4 = {**converted, "$schema": "http://json-schema.org/draft-04/schema#"}
            fast: Callable[[Any], Any] | None = fastjsonschema.compile(draft_4, use_formats=False)
        except Exception:  # whatever it cannot compile, the other validator checks alone
            fast = None
        cached = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft4Validator(converted), fast)
    return cached[1], cached[2]


_NARROWED: dict[tuple[int, frozenset[str]], tuple[JsonObject, JsonObject]] = {}


def _without(schema: JsonObject, fields: frozenset[str]) -> JsonObject:
    """``schema`` without the top-level ``properties`` named in ``fields`` (its own keywords kept), one
    per schema object and set of fields; held with the schema, as in :func:`_validator`."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not fields & properties.keys():
        return schema
    key = (id(schema), fields)
    cached = _NARROWED.get(key)
    if cached is None or cached[0] is not schema:
        if len(_NARROWED) > 256:
            _NARROWED.clear()
        narrowed = {**schema, "properties": {k: v for k, v in properties.items() if k not in fields}}
        cached = _NARROWED[key] = (schema, narrowed)
    return cached[1]


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _field_errors(error: Any) -> list[FieldError]:
    """kube-openapi's error for one ``jsonschema`` error, as ``kubeOpenAPIResultToFieldErrors`` converts it."""
    path = _path(error.absolute_path)
    name = path or "."
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if keyword == "required":
        present = value if isinstance(value, dict) else {}
        return [required(_join(path, key)) for key in expected if key not in present]
    if keyword == "type":
        types = ",".join(expected) if isinstance(expected, list) else str(expected)
        actual = _type_name(value)
        return [FieldError(TYPE_INVALID, path, actual, f"{name} in body must be of type {types}: {quote(actual)}")]
    if keyword == "enum":
        return [not_supported(path, value, [item if isinstance(item, str) else json.dumps(item) for item in expected])]
    if keyword in ("minimum", "maximum"):
        exclusive = bool(error.schema.get("exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"))
        relation = "greater than" if keyword == "minimum" else "less than"
        bound = go_float(float(expected))
        detail = f"{name} in body should be {relation}{'' if exclusive else ' or equal to'} {bound}"
        return [FieldError(INVALID, path, value, detail)]
    if keyword == "maxLength":
        return [FieldError(TOO_LONG, path, value, f"may not be longer than {expected}")]
    if keyword == "maxItems":
        return [FieldError(TOO_MANY, path, len(value), f"must have at most {expected} items")]
    details = {
        "minLength": f"{name} in body should be at least {expected} chars long",
        "pattern": f"{name} in body should match '{expected}'",
        "minItems": f"{name} in body should have at least {expected} items",
        "uniqueItems": f"{name} in body shouldn't contain duplicates",
        "multipleOf": f"{name} in body should be a multiple of {expected}",
        "minProperties": f"{name} in body should have at least {expected} properties",
        "maxProperties": f"{name} in body should have at most {expected} properties",
        "anyOf": f"{name} in body must validate at least one schema (anyOf)",
        "oneOf": f"{name} in body must validate one and only one schema (oneOf)",
        "not": f"{name} in body must not validate the schema (not)",
    }
    return [FieldError(INVALID, path, value, details.get(keyword, error.message))]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def validate(obj: JsonObject, schema: JsonObject, *, unchanged: frozenset[str] = frozenset()) -> list[FieldError]:
    """Every constraint of ``schema`` that ``obj`` breaks, ordered by field. ``unchanged``: top-level
    fields an update left as the stored object had them; their subtrees are not walked, since the update
    tolerates every problem the stored object already had (ratcheting, strategies.validate). A status
    write then validates its status alone, as cheaply as the real server's (a benchmark writing 10,000
    statuses spent a fifth of the emulator's time validating specs nobody changed)."""
    validator, fast = _validators(_without(schema, unchanged) if unchanged else schema)
    if fast is not None:
        try:
            fast(obj)
            return []
        except fastjsonschema.JsonSchemaValueException:
            pass  # which problems, and where: the other validator's errors say it
    causes = [cause for error in validator.iter_errors(obj) for cause in _field_errors(error)]
    return sorted(causes, key=lambda cause: (cause.field, cause.type))
