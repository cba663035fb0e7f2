"""Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``), read into JSON objects.

kubectl's typed clients (``kubectl create namespace|configmap|secret|serviceaccount|service|deployment|
role|clusterrole|rolebinding|clusterrolebinding|poddisruptionbudget``, ``kubectl auth can-i``) send built-in
kinds this way. A body is the 4-byte magic ``k8s\\0`` and a ``runtime.Unknown`` envelope (the object's
apiVersion and kind, and its bytes in the kind's generated protobuf message). The wire format is the
``protobuf`` library's work; the messages are described below, in the table :data:`MESSAGES`, for the fields
of those kinds (field numbers are the API's, stable across releases). A field the table does not know is
refused with 400 rather than dropped, so nothing a client sent is silently lost.

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

MAGIC = b"k8s\x00"
_PACKAGE = "emulator.k8s"

# message → {number: "jsonName type"}; type is a scalar (string, int32, int64, bool, bytes), a message,
# "map:<value>" (string keys), with "[]" for repeated and a leading "!" for Go pointer fields.
MESSAGES: Mapping[str, Mapping[int, str]] = {
    # k8s.io/apimachinery runtime and meta/v1
    "Unknown": {1: "typeMeta TypeMeta", 2: "raw bytes", 3: "contentEncoding string", 4: "contentType string"},
    "TypeMeta": {1: "apiVersion string", 2: "kind string"},
    "Time": {1: "seconds int64", 2: "nanos int32"},
    "IntOrString": {1: "type int64", 2: "intVal int32", 3: "strVal string"},
    "Quantity": {1: "string string"},
    "ObjectMeta": {
        1: "name string",
        2: "generateName string",
        3: "namespace string",
        4: "selfLink string",
        5: "uid string",
        6: "resourceVersion string",
        7: "generation int64",
        8: "creationTimestamp Time",
        9: "deletionTimestamp Time",
        10: "deletionGracePeriodSeconds !int64",
        11: "labels map:string",
        12: "annotations map:string",
        13: "ownerReferences OwnerReference[]",
        14: "finalizers string[]",
    },
    "OwnerReference": {
        5: "apiVersion string",
        1: "kind string",
        3: "name string",
        4: "uid string",
        6: "controller !bool",
        7: "blockOwnerDeletion !bool",
    },
    "LabelSelector": {1: "matchLabels map:string", 2: "matchExpressions LabelSelectorRequirement[]"},
    "LabelSelectorRequirement": {1: "key string", 2: "operator string", 3: "values string[]"},
    # core/v1
    "Namespace": {1: "metadata ObjectMeta", 2: "spec NamespaceSpec", 3: "status NamespaceStatus"},
    "NamespaceSpec": {1: "finalizers string[]"},
    "NamespaceStatus": {1: "phase string"},
    "ConfigMap": {
        1: "metadata ObjectMeta",
        2: "data map:string",
        3: "binaryData map:bytes",
        4: "immutable !bool",
    },
    "Secret": {
        1: "metadata ObjectMeta",
        2: "data map:bytes",
        3: "type string",
        4: "stringData map:string",
        5: "immutable !bool",
    },
    "ServiceAccount": {
        1: "metadata ObjectMeta",
        2: "secrets ObjectReference[]",
        3: "imagePullSecrets LocalObjectReference[]",
        4: "automountServiceAccountToken !bool",
    },
    "ObjectReference": {
        1: "kind string",
        2: "namespace string",
        3: "name string",
        4: "uid string",
        5: "apiVersion string",
        6: "resourceVersion string",
        7: "fieldPath string",
    },
    "LocalObjectReference": {1: "name string"},
    "Service": {1: "metadata ObjectMeta", 2: "spec ServiceSpec", 3: "status ServiceStatus"},
    "ServiceSpec": {
        1: "ports ServicePort[]",
        2: "selector map:string",
        3: "clusterIP string",
        4: "type string",
        5: "externalIPs string[]",
        7: "sessionAffinity string",
        8: "loadBalancerIP string",
        9: "loadBalancerSourceRanges string[]",
        10: "externalName string",
        11: "externalTrafficPolicy string",
        12: "healthCheckNodePort int32",
        13: "publishNotReadyAddresses bool",
        17: "ipFamilyPolicy !string",
        18: "clusterIPs string[]",
        19: "ipFamilies string[]",
        20: "allocateLoadBalancerNodePorts !bool",
        21: "loadBalancerClass !string",
        22: "internalTrafficPolicy !string",
    },
    "ServicePort": {
        1: "name string",
        2: "protocol string",
        3: "port !int32",
        4: "targetPort IntOrString",
        5: "nodePort int32",
        6: "appProtocol !string",
    },
    "ServiceStatus": {1: "loadBalancer LoadBalancerStatus"},
    "LoadBalancerStatus": {1: "ingress LoadBalancerIngress[]"},
    "LoadBalancerIngress": {1: "ip string", 2: "hostname string"},
    "PodTemplateSpec": {1: "metadata ObjectMeta", 2: "spec PodSpec"},
    "PodSpec": {
        2: "containers Container[]",
        3: "restartPolicy string",
        4: "terminationGracePeriodSeconds !int64",
        5: "activeDeadlineSeconds !int64",
        6: "dnsPolicy string",
        7: "nodeSelector map:string",
        8: "serviceAccountName string",
        9: "serviceAccount string",
        10: "nodeName string",
        11: "hostNetwork bool",
        12: "hostPID bool",
        13: "hostIPC bool",
        15: "imagePullSecrets LocalObjectReference[]",
        16: "hostname string",
        17: "subdomain string",
        19: "schedulerName string",
        20: "initContainers Container[]",
        21: "automountServiceAccountToken !bool",
        24: "priorityClassName string",
        25: "priority !int32",
        27: "shareProcessNamespace !bool",
        29: "runtimeClassName !string",
        30: "enableServiceLinks !bool",
        31: "preemptionPolicy !string",
    },
    "Container": {
        1: "name string",
        2: "image string",
        3: "command string[]",
        4: "args string[]",
        5: "workingDir string",
        6: "ports ContainerPort[]",
        7: "env EnvVar[]",
        8: "resources ResourceRequirements",
        13: "terminationMessagePath string",
        14: "imagePullPolicy string",
        16: "stdin bool",
        17: "stdinOnce bool",
        18: "tty bool",
        20: "terminationMessagePolicy string",
    },
    "ContainerPort": {
        1: "name string",
        2: "hostPort int32",
        3: "containerPort !int32",
        4: "protocol string",
        5: "hostIP string",
    },
    "EnvVar": {1: "name string", 2: "value string"},
    "ResourceRequirements": {1: "limits map:Quantity", 2: "requests map:Quantity"},
    # apps/v1
    "Deployment": {1: "metadata ObjectMeta", 2: "spec DeploymentSpec", 3: "status DeploymentStatus"},
    "DeploymentSpec": {
        1: "replicas !int32",
        2: "selector LabelSelector",
        3: "template PodTemplateSpec",
        4: "strategy DeploymentStrategy",
        5: "minReadySeconds int32",
        6: "revisionHistoryLimit !int32",
        7: "paused bool",
        9: "progressDeadlineSeconds !int32",
    },
    "DeploymentStrategy": {1: "type string", 2: "rollingUpdate RollingUpdateDeployment"},
    "RollingUpdateDeployment": {1: "maxUnavailable IntOrString", 2: "maxSurge IntOrString"},
    "DeploymentStatus": {
        1: "observedGeneration int64",
        2: "replicas int32",
        3: "updatedReplicas int32",
        4: "availableReplicas int32",
        5: "unavailableReplicas int32",
        7: "readyReplicas int32",
        8: "collisionCount !int32",
        9: "terminatingReplicas !int32",
    },
    # rbac.authorization.k8s.io/v1
    "Role": {1: "metadata ObjectMeta", 2: "rules PolicyRule[]"},
    "ClusterRole": {1: "metadata ObjectMeta", 2: "rules PolicyRule[]", 3: "aggregationRule AggregationRule"},
    "PolicyRule": {
        1: "verbs string[]",
        2: "apiGroups string[]",
        3: "resources string[]",
        4: "resourceNames string[]",
        5: "nonResourceURLs string[]",
    },
    "AggregationRule": {1: "clusterRoleSelectors LabelSelector[]"},
    "RoleBinding": {1: "metadata ObjectMeta", 2: "subjects Subject[]", 3: "roleRef RoleRef"},
    "ClusterRoleBinding": {1: "metadata ObjectMeta", 2: "subjects Subject[]", 3: "roleRef RoleRef"},
    "Subject": {1: "kind !string", 2: "apiGroup string", 3: "name !string", 4: "namespace string"},
    "RoleRef": {1: "apiGroup !string", 2: "kind !string", 3: "name !string"},
    # authorization.k8s.io/v1 (kubectl auth can-i)
    "SelfSubjectAccessReview": {
        1: "metadata ObjectMeta",
        2: "spec SelfSubjectAccessReviewSpec",
        3: "status SubjectAccessReviewStatus",
    },
    "SelfSubjectAccessReviewSpec": {
        1: "resourceAttributes ResourceAttributes",
        2: "nonResourceAttributes NonResourceAttributes",
    },
    "ResourceAttributes": {
        1: "namespace string",
        2: "verb string",
        3: "group string",
        4: "version string",
        5: "resource string",
        6: "subresource string",
        7: "name string",
    },
    "NonResourceAttributes": {1: "path string", 2: "verb string"},
    "SubjectAccessReviewStatus": {1: "allowed bool", 2: "reason string", 3: "evaluationError string", 4: "denied bool"},
    # policy/v1
    "PodDisruptionBudget": {
        1: "metadata ObjectMeta",
        2: "spec PodDisruptionBudgetSpec",
        3: "status PodDisruptionBudgetStatus",
    },
    "PodDisruptionBudgetSpec": {
        1: "minAvailable IntOrString",
        2: "selector LabelSelector",
        3: "maxUnavailable IntOrString",
        4: "unhealthyPodEvictionPolicy !string",
    },
    "PodDisruptionBudgetStatus": {
        1: "observedGeneration int64",
        3: "disruptionsAllowed !int32",
        4: "currentHealthy !int32",
        5: "desiredHealthy !int32",
        6: "expectedPods !int32",
    },
}

ROOT_KINDS: Mapping[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("apps/v1", "Deployment"): "Deployment",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "ClusterRoleBinding",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
}

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
