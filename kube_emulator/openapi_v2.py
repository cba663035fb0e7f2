"""``/openapi/v2``: the Swagger 2.0 document, as JSON or as the protobuf kubectl before 1.27 asks for.

Older kubectl (Debian's ``kubernetes-client`` is 1.20) validates ``apply``/``create`` on the client from
this document, fetched only as gnostic's ``openapi_v2.Document`` protobuf
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``), and ``explain`` reads it too. It holds
the definitions of custom resources, from their CRDs' structural schemas (kubectl then validates them as
it would against a cluster); built-in kinds are left out, so kubectl skips validating them rather than
refusing what a stub schema does not list. Its paths hold each kind's PATCH operation with the ``dryRun``
parameter, which is how that kubectl decides that ``--dry-run=server`` is supported.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import yaml

from kube_emulator.jsonutil import JsonObject
from kube_emulator.openapi import schema_name
from kube_emulator.protobuf import message_classes
from kube_emulator.resources import ResourceRegistry, ResourceType

PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""What the answer says it is: Go's media-type parser refuses the ``@`` of the type kubectl asks for."""
_GVK = "x-kubernetes-group-version-kind"

# gnostic's OpenAPIv2.proto, the messages and fields this document uses.
_GNOSTIC: Mapping[str, Mapping[int, str]] = {
    "Document": {1: "swagger string", 2: "info Info", 8: "paths Paths", 9: "definitions Definitions"},
    "Info": {1: "title string", 2: "version string"},
    "Paths": {2: "path NamedPathItem[]"},
    "NamedPathItem": {1: "name string", 2: "value PathItem"},
    "PathItem": {8: "patch Operation"},
    "Operation": {5: "operation_id string", 8: "parameters ParametersItem[]", 13: "vendor_extension NamedAny[]"},
    "ParametersItem": {1: "parameter Parameter"},
    "Parameter": {2: "non_body_parameter NonBodyParameter"},
    "NonBodyParameter": {3: "query_parameter_sub_schema QueryParameterSubSchema"},
    "QueryParameterSubSchema": {2: "in string", 4: "name string", 6: "type string"},
    "Definitions": {1: "additional_properties NamedSchema[]"},
    "NamedSchema": {1: "name string", 2: "value Schema"},
    "NamedAny": {1: "name string", 2: "value Any"},
    "Any": {2: "yaml string"},
    "Schema": {
        2: "format string",
        4: "description string",
        7: "maximum double",
        8: "exclusive_maximum bool",
        9: "minimum double",
        10: "exclusive_minimum bool",
        11: "max_length int64",
        12: "min_length int64",
        13: "pattern string",
        14: "max_items int64",
        15: "min_items int64",
        19: "required string[]",
        20: "enum Any[]",
        21: "additional_properties AdditionalPropertiesItem",
        22: "type TypeItem",
        23: "items ItemsItem",
        25: "properties Properties",
        31: "vendor_extension NamedAny[]",
    },
    "AdditionalPropertiesItem": {1: "schema Schema", 2: "boolean bool"},
    "TypeItem": {1: "value string[]"},
    "ItemsItem": {1: "schema Schema[]"},
    "Properties": {1: "additional_properties NamedSchema[]"},
}
_KEPT = (
    "type",
    "format",
    "description",
    "properties",
    "items",
    "required",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "additionalProperties",
)


def _v2_schema(schema: Any) -> JsonObject:
    """The Swagger 2.0 subset of a structural schema, as the API server publishes it: junctors and the
    ``x-kubernetes-*`` extensions go, and an int-or-string or junctor-only value has no type (anything)."""
    if not isinstance(schema, dict):
        return {}
    out: JsonObject = {key: schema[key] for key in _KEPT if key in schema}
    if schema.get("x-kubernetes-int-or-string") or ("type" not in schema and "properties" not in schema):
        out.pop("type", None)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("properties", None)  # kubectl would refuse what the schema does not list
    if isinstance(out.get("properties"), dict):
        out["properties"] = {name: _v2_schema(child) for name, child in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _v2_schema(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _v2_schema(out["additionalProperties"])
    return out


def _definition(resource_type: ResourceType) -> JsonObject:
    definition = _v2_schema(resource_type.schema or {})
    properties = definition.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {"type": "object", "description": "Standard object's metadata."}
    definition[_GVK] = [{"group": resource_type.group, "kind": resource_type.kind, "version": resource_type.version}]
    return definition


_QUERY_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation")


def _patch_path(resource_type: ResourceType) -> tuple[str, JsonObject]:
    prefix = f"/apis/{resource_type.group}/{resource_type.version}" if resource_type.group else "/api/v1"
    scope = f"{prefix}/namespaces/{{namespace}}" if resource_type.namespaced else prefix
    operation = {
        "operationId": f"patch{resource_type.kind}",
        "parameters": [{"in": "query", "name": name, "type": "string"} for name in _QUERY_PARAMETERS],
        _GVK: {"group": resource_type.group, "kind": resource_type.kind, "version": resource_type.version},
    }
    return f"{scope}/{resource_type.plural}/{{name}}", {"patch": operation}


def document(registry: ResourceRegistry, server_version: str) -> JsonObject:
    definitions = {schema_name(rt): _definition(rt) for rt in registry if not rt.builtin}
    paths = dict(_patch_path(rt) for rt in registry if "patch" in rt.verbs)
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": server_version},
        "paths": paths,
        "definitions": definitions,
    }


@functools.cache
def _classes() -> dict[str, Any]:
    return message_classes(_GNOSTIC, "emulator.gnostic")


def _any(value: Any) -> Any:
    return _classes()["Any"](yaml=yaml.safe_dump(value, default_flow_style=False))


def _schema_message(schema: JsonObject) -> Any:
    classes = _classes()
    message = classes["Schema"]()
    for key, text in (("format", "format"), ("description", "description"), ("pattern", "pattern")):
        if isinstance(schema.get(key), str):
            setattr(message, text, schema[key])
    for key, field in (("minimum", "minimum"), ("maximum", "maximum")):
        if isinstance(schema.get(key), int | float) and not isinstance(schema.get(key), bool):
            setattr(message, field, float(schema[key]))
    for key, field in (("exclusiveMinimum", "exclusive_minimum"), ("exclusiveMaximum", "exclusive_maximum")):
        if isinstance(schema.get(key), bool):
            setattr(message, field, schema[key])
    for key, field in (
        ("minLength", "min_length"),
        ("maxLength", "max_length"),
        ("minItems", "min_items"),
        ("maxItems", "max_items"),
    ):
        if isinstance(schema.get(key), int) and not isinstance(schema.get(key), bool):
            setattr(message, field, schema[key])
    if isinstance(schema.get("type"), str):
        message.type.value.append(schema["type"])
    message.required.extend(str(name) for name in schema.get("required") or [])
    message.enum.extend(_any(value) for value in schema.get("enum") or [])
    for name, child in (schema.get("properties") or {}).items():
        message.properties.additional_properties.add(name=name, value=_schema_message(child))
    if isinstance(schema.get("items"), dict):
        message.items.schema.append(_schema_message(schema["items"]))
    if isinstance(schema.get("additionalProperties"), dict):
        message.additional_properties.schema.CopyFrom(_schema_message(schema["additionalProperties"]))
    if _GVK in schema:
        message.vendor_extension.add(name=_GVK, value=_any(schema[_GVK]))
    return message


def document_protobuf(registry: ResourceRegistry, server_version: str) -> bytes:
    """:func:`document` as gnostic's ``openapi_v2.Document`` protobuf."""
    swagger = document(registry, server_version)
    message = _classes()["Document"](swagger="2.0")
    message.info.title, message.info.version = "Kubernetes", server_version
    message.paths.SetInParent()
    message.definitions.SetInParent()
    for path, item in swagger["paths"].items():
        operation = item["patch"]
        patch = message.paths.path.add(name=path).value.patch
        patch.operation_id = operation["operationId"]
        for parameter in operation["parameters"]:
            query = patch.parameters.add().parameter.non_body_parameter.query_parameter_sub_schema
            query.name, query.type = parameter["name"], parameter["type"]
            setattr(query, "in", parameter["in"])  # a Python keyword
        patch.vendor_extension.add(name=_GVK, value=_any(operation[_GVK]))
    for name, definition in swagger["definitions"].items():
        message.definitions.additional_properties.add(name=name, value=_schema_message(definition))
    return bytes(message.SerializeToString())
