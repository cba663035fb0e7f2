"""Validating objects as the API server would, offline.

- Built-in kinds: the Kubernetes OpenAPI schemas as JSON Schema, in their *strict* form (an unknown field
  is an error, as with ``kubectl apply --validate=strict``), from the PyPI package ``kubernetes-validate``,
  which ships them for every Kubernetes minor from 1.25 on. Every error is reported, not only the first.
- Custom resources: the CRD's ``openAPIV3Schema`` with ``jsonschema``, plus what the API server does beyond
  validation: fields the structural schema does not specify are *pruned* (silently dropped), which
  :func:`pruned_fields` reports.
- CRDs: the structural-schema rules the API server enforces on ``apiextensions.k8s.io/v1`` (types
  everywhere, no ``$ref``, junctors only restricting fields specified outside them, the
  ``x-kubernetes-*`` extensions used where they are allowed), in :func:`structural_errors`.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
import referencing

from tests.guard import REQUIRE_SERVERS

# The oldest and newest Kubernetes minors the manifests are checked against: 1.29 is the oldest release
# still supported by the major managed offerings when this was written; the newest is what the schema
# package ships.
KUBERNETES_VERSIONS = ("1.29", "latest")


def _schema_package() -> Any:
    import kubernetes_validate.utils  # type: ignore[import-untyped,unused-ignore]

    return kubernetes_validate.utils


def resolve_version(version: str) -> str:
    utils = _schema_package()
    return str(utils.latest_version()) if version == "latest" else version


@functools.cache
def _definitions(version: str) -> tuple[str, Any]:
    utils = _schema_package()
    known = [v for v in utils.all_versions() if utils.major_minor(v) <= utils.major_minor(version)]
    directory = f"kubernetes-json-schema/v{known[-1]}-local-strict"
    return directory, utils.schema_contents(f"{directory}/_definitions.json", version)


def kubernetes_errors(document: Mapping[str, Any], version: str) -> list[str]:
    """Every strict-schema error of a built-in object at this Kubernetes version (``[]``: valid)."""
    utils = _schema_package()
    version = resolve_version(version)
    directory, definitions = _definitions(version)
    group_version = str(document["apiVersion"])
    # kubernetes-validate's file naming: rbac.authorization.k8s.io/v1 -> rbac-v1, v1 -> v1
    prefix, _, short = group_version.rpartition("/")
    name = f"{prefix.split('.')[0]}-{short}" if prefix else short
    try:
        schema = utils.schema_contents(f"{directory}/{str(document['kind']).lower()}-{name}.json", version)
    except FileNotFoundError:
        return [f"no schema for {document['kind']} {group_version} in Kubernetes {version}"]
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        [
            ("", referencing.Resource.from_contents(schema)),
            ("_definitions.json", referencing.Resource.from_contents(definitions)),
        ]
    )
    registry = referencing.Resource.from_contents(definitions) @ registry
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return [
        f"{_path(error.absolute_path)}: {error.message}"
        for error in sorted(validator.iter_errors(dict(document)), key=lambda e: list(map(str, e.absolute_path)))
    ]


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(root)"


# -- custom resources -------------------------------------------------------------------------------


def crd_version_schema(crd: Mapping[str, Any], version: str) -> dict[str, Any]:
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            return dict(entry["schema"]["openAPIV3Schema"])
    raise KeyError(version)


def custom_resource_errors(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Validation errors (the CRD's openAPIV3Schema) and fields the API server would prune."""
    validator = jsonschema.Draft4Validator(schema)
    errors = [f"{_path(e.absolute_path)}: {e.message}" for e in validator.iter_errors(json.loads(json.dumps(obj)))]
    errors += [
        f"{path}: unknown field, the API server would drop it (not in the CRD's schema)"
        for path in pruned_fields(obj, schema, root=True)
    ]
    return errors


def pruned_fields(value: Any, schema: Mapping[str, Any], *, path: str = "", root: bool = False) -> Iterator[str]:
    """Paths of the fields structural pruning removes: those not specified by ``properties``,
    ``additionalProperties`` or ``x-kubernetes-preserve-unknown-fields``. At the root, apiVersion, kind and
    metadata are always kept (the server handles ObjectMeta itself)."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-embedded-resource"):
        return
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if root and key in ("apiVersion", "kind", "metadata"):
                continue
            if key in properties:
                yield from pruned_fields(item, properties[key], path=where)
            elif isinstance(additional, Mapping):
                yield from pruned_fields(item, additional, path=where)
            elif additional is not True:
                yield where
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from pruned_fields(item, schema["items"], path=f"{path}[{index}]")


# -- structural schemas -----------------------------------------------------------------------------

_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
_FORBIDDEN_IN_JUNCTORS = ("description", "type", "default", "additionalProperties", "nullable")
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def structural_errors(schema: Mapping[str, Any]) -> list[str]:
    """The API server's structural-schema rules (apiextensions.k8s.io/v1 refuses a CRD that breaks them)."""
    errors: list[str] = []
    if schema.get("type") != "object":
        errors.append("(root): type must be object")
    _check_node(schema, "(root)", errors, root=True)
    return errors


def _check_node(node: Mapping[str, Any], path: str, errors: list[str], *, root: bool = False) -> None:
    if "$ref" in node:
        errors.append(f"{path}: $ref is not allowed")
    int_or_string = bool(node.get("x-kubernetes-int-or-string"))
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    if not node.get("type") and not int_or_string and not preserve:
        errors.append(
            f"{path}: type is required (unless x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields)"
        )
    if int_or_string:
        if node.get("type"):
            errors.append(f"{path}: x-kubernetes-int-or-string must not have a type")
        any_of = node.get("anyOf")
        all_of_any = [item.get("anyOf") for item in node.get("allOf") or []]
        if any_of is not None and any_of != _INT_OR_STRING and _INT_OR_STRING not in all_of_any:
            errors.append(f"{path}: x-kubernetes-int-or-string allows only anyOf [integer, string]")
    if preserve and node.get("type") not in (None, "object"):
        errors.append(f"{path}: x-kubernetes-preserve-unknown-fields needs type object (or none)")
    if node.get("additionalProperties") is False:
        errors.append(f"{path}: additionalProperties cannot be false")
    elif "additionalProperties" in node and node.get("properties"):
        errors.append(f"{path}: properties and additionalProperties are mutually exclusive")
    for key in node:
        if key.startswith("x-kubernetes-") and key not in (
            "x-kubernetes-int-or-string",
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-embedded-resource",
            "x-kubernetes-list-type",
            "x-kubernetes-list-map-keys",
            "x-kubernetes-map-type",
            "x-kubernetes-validations",
        ):
            errors.append(f"{path}: unknown extension {key}")
    properties = node.get("properties") or {}
    for name, child in properties.items():
        where = f"{path}.{name}" if path != "(root)" else name
        if root and name == "metadata":
            extra = set(child) - {"type", "description", "properties"}
            allowed = {"name", "generateName"}
            if extra or set(child.get("properties") or {}) - allowed:
                errors.append("metadata: only restrictions of metadata.name and metadata.generateName are allowed")
        _check_node(child, where, errors)
    if isinstance(node.get("additionalProperties"), Mapping):
        _check_node(node["additionalProperties"], f"{path}.*", errors)
    if "items" in node:
        if not isinstance(node["items"], Mapping):
            errors.append(f"{path}: items must be one schema")
        else:
            _check_node(node["items"], f"{path}[*]", errors)
    elif node.get("type") == "array":
        errors.append(f"{path}: an array needs items")
    for junctor in _JUNCTORS:
        branches = node.get(junctor)
        if branches is None:
            continue
        for index, branch in enumerate(branches if isinstance(branches, list) else [branches]):
            _check_junctor_branch(
                branch,
                node,
                f"{path}.{junctor}[{index}]",
                errors,
                int_or_string=int_or_string and junctor in ("anyOf", "allOf"),
            )


def _check_junctor_branch(
    branch: Mapping[str, Any], outer: Mapping[str, Any], path: str, errors: list[str], *, int_or_string: bool
) -> None:
    """Inside allOf/anyOf/oneOf/not: no types, descriptions, defaults…, and only fields also specified outside."""
    if "$ref" in branch:
        errors.append(f"{path}: $ref is not allowed")
    for key in _FORBIDDEN_IN_JUNCTORS:
        if key in branch and not (int_or_string and key == "type"):
            errors.append(f"{path}: {key} is not allowed inside a junctor")
    outer_properties = outer.get("properties") or {}
    for name in branch.get("properties") or {}:
        if name not in outer_properties:
            errors.append(f"{path}.properties.{name}: must also be specified outside the junctor")
    if "items" in branch and "items" not in outer:
        errors.append(f"{path}.items: must also be specified outside the junctor")
    for junctor in _JUNCTORS:
        for index, inner in enumerate(branch.get(junctor) or []):
            _check_junctor_branch(inner, outer, f"{path}.{junctor}[{index}]", errors, int_or_string=int_or_string)


def require_schemas() -> None:
    """The Kubernetes schemas come from the dev dependency kubernetes-validate: skip without it locally, but
    never in CI (AUTOSCALER_REQUIRE_SERVERS=1, set by .ci/run)."""
    if importlib.util.find_spec("kubernetes_validate") is None:
        message = "kubernetes-validate is not installed (pip install kubernetes-validate)"
        if REQUIRE_SERVERS:
            pytest.fail(f"{message}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping")
        pytest.skip(message)
