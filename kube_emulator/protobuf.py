"""Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``), read into JSON objects.

kubectl's typed clients (``kubectl create namespace|configmap|secret|serviceaccount|service|deployment|
role|clusterrole|rolebinding|clusterrolebinding|poddisruptionbudget``, ``kubectl auth can-i``) send built-in
kinds this way. A body is the 4-byte magic ``k8s\\0`` and a ``runtime.Unknown`` envelope (the object's
apiVersion and kind, and its bytes in the kind's generated protobuf message). The wire format is the
``protobuf`` library's work; the messages are described in a table
(:data:`kube_emulator.protobuf_messages.MESSAGES`) for the fields of those kinds (field numbers are the
API's, stable across releases), turned into message classes here (:func:`message_classes`). A field the
table does not know is refused with 400 rather than dropped, so nothing a client sent is silently lost.

Turning the message into JSON follows the Go types' JSON encoding: a field absent from the wire is
absent; present with a zero value it is kept only where the Go field is a pointer (``!`` in the table,
``spec.replicas: 0`` stays), as Go's ``omitempty`` drops the others; ``Time`` becomes RFC 3339 (zero: no
field), ``IntOrString`` a number or a string, ``Quantity`` its string, ``bytes`` base64.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

from kube_emulator import errors
from kube_emulator.jsonutil import JsonObject
from kube_emulator.protobuf_messages import MESSAGES, ROOT_KINDS

MAGIC = b"k8s\x00"
_PACKAGE = "emulator.k8s"

_SCALARS = {
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
}
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED


def _field(spec: str) -> tuple[str, str, bool, bool, str | None]:
    """``"labels map:string"`` → (name, type, repeated, pointer, map value type)."""
    name, kind = spec.split()
    pointer = kind.startswith("!")
    kind = kind.lstrip("!")
    repeated = kind.endswith("[]")
    kind = kind.removesuffix("[]")
    map_value = kind.removeprefix("map:") if kind.startswith("map:") else None
    return name, kind, repeated, pointer, map_value


def _set_type(field: descriptor_pb2.FieldDescriptorProto, kind: str, package: str) -> None:
    if kind in _SCALARS:
        field.type = _SCALARS[kind]
    else:
        field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
        field.type_name = f".{package}.{kind}"


def message_classes(table: Mapping[str, Mapping[int, str]], package: str) -> dict[str, type[message.Message]]:
    """A message class per entry of a table in :data:`MESSAGES`' notation (proto2, so a field's presence
    on the wire is kept), built with the ``protobuf`` library's descriptors."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package, syntax="proto2")
    for message_name, fields in table.items():
        described = file.message_type.add(name=message_name)
        for number, spec in fields.items():
            name, kind, repeated, _pointer, map_value = _field(spec)
            field = described.field.add(name=name, number=number, json_name=name)
            if map_value is not None:
                entry_name = f"{name[0].upper()}{name[1:]}Entry"
                entry = described.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                _set_type(entry.field.add(name="key", number=1, label=_OPTIONAL), "string", package)
                _set_type(entry.field.add(name="value", number=2, label=_OPTIONAL), map_value, package)
                field.label = _REPEATED
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
                field.type_name = f".{package}.{message_name}.{entry_name}"
            else:
                field.label = _REPEATED if repeated else _OPTIONAL
                _set_type(field, kind, package)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}")) for name in table}


@functools.cache
def _classes() -> dict[str, type[message.Message]]:
    return message_classes(MESSAGES, _PACKAGE)


def _parse(message_name: str, raw: bytes) -> message.Message:
    parsed = _classes()[message_name]()
    try:
        parsed.ParseFromString(raw)
    except message.DecodeError as problem:
        raise errors.bad_request(f"the body of the request could not be decoded: {problem}") from problem
    return parsed


def _unknown_numbers(parsed: message.Message) -> list[int]:
    from google.protobuf import unknown_fields

    found = unknown_fields.UnknownFieldSet(parsed)
    return sorted({found[index].field_number for index in range(len(found))})


def _special(message_name: str, value: Any) -> Any:
    """Types with their own JSON form; ``...`` for a message rendered field by field."""
    if message_name == "Time":
        if value.seconds == 0 and value.nanos == 0:
            return None  # Go's zero time is null, and a null field is no field
        return datetime.fromtimestamp(value.seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if message_name == "IntOrString":
        return str(value.strVal) if value.type == 1 else int(value.intVal)
    if message_name == "Quantity":
        return str(value.string)
    return ...


def _value(kind: str, value: Any, path: str) -> Any:
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind in _SCALARS:
        return value
    special = _special(kind, value)
    return _to_json(kind, value, path) if special is ... else special


def _zero(value: Any) -> bool:
    return value is False or (not isinstance(value, bool) and value in ("", b"", 0))


def _to_json(message_name: str, parsed: message.Message, path: str) -> JsonObject:
    unknown = _unknown_numbers(parsed)
    if unknown:
        where = f" (at {path})" if path else ""
        raise errors.bad_request(
            f"the emulator does not decode field {unknown[0]} of {message_name}{where} in protobuf bodies; "
            "send the object as JSON (kubectl create -f, kubectl apply)"
        )
    result: JsonObject = {}
    fields = MESSAGES[message_name]
    for descriptor, value in parsed.ListFields():
        name, kind, repeated, pointer, map_value = _field(fields[descriptor.number])
        child = f"{path}.{name}" if path else name
        if map_value is not None:
            result[name] = {key: _value(map_value, item, f"{child}[{key}]") for key, item in value.items()}
        elif repeated:
            result[name] = [_value(kind, item, f"{child}[{index}]") for index, item in enumerate(value)]
        elif kind in _SCALARS:
            if pointer or not _zero(value):  # Go's omitempty, which pointers escape
                result[name] = _value(kind, value, child)
        else:
            converted = _value(kind, value, child)
            if converted is not None:
                result[name] = converted
    return result


def decode_object(body: bytes) -> JsonObject:
    """A protobuf request body as the JSON object a client would have sent."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the body of the request could not be decoded: no Kubernetes protobuf magic prefix")
    envelope: Any = _parse("Unknown", body[len(MAGIC) :])
    api_version, kind = str(envelope.typeMeta.apiVersion), str(envelope.typeMeta.kind)
    encoding = str(envelope.contentEncoding)
    if encoding:
        raise errors.bad_request(f"the body of the request could not be decoded: content encoding {encoding!r}")
    message_name = ROOT_KINDS.get((api_version, kind))
    if message_name is None:
        raise errors.unsupported_media_type(
            "application/vnd.kubernetes.protobuf", ["application/json", "application/yaml"]
        )
    decoded = _to_json(message_name, _parse(message_name, bytes(envelope.raw)), "")
    return {"apiVersion": api_version, "kind": kind, **decoded}
