"""A trigger's ``authenticationRef``: the (Cluster)TriggerAuthentication it names, read for the *names* of the
Secrets and ConfigMaps its parameters come from — never a credential's value. The converted backend reads each
credential from a file that key is mounted at, or from the Secret through the API. The only values read are
the few that are no credential (:data:`READABLE`), each from the one key named, when that ConfigMap or Secret
is in the input.

KEDA resolves a parameter from ``secretTargetRef`` and ``configMapTargetRef`` (a key of an object in the
ScaledObject's namespace, or for a ClusterTriggerAuthentication in KEDA's own namespace,
``KEDA_CLUSTER_OBJECT_NAMESPACE``, ``keda`` by default), or from a container's environment, a file, a vault, a
cloud identity. Only the first two name something a file can be mounted from; each other source is reported.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.convert.model import Conversion

TRIGGER_AUTHENTICATION = "TriggerAuthentication"
CLUSTER_TRIGGER_AUTHENTICATION = "ClusterTriggerAuthentication"
AUTH_KINDS = (TRIGGER_AUTHENTICATION, CLUSTER_TRIGGER_AUTHENTICATION)
DEFAULT_KEDA_NAMESPACE = "keda"
# Sources of a parameter that no file can be mounted from, and why.
UNMOUNTABLE = {
    "env": "read from the scale target's container environment by KEDA",
    "filePath": "read from a file in KEDA's own pod",
    "podIdentity": "a cloud workload identity of KEDA's pod",
    "hashiCorpVault": "read from HashiCorp Vault by KEDA",
    "azureKeyVault": "read from Azure Key Vault by KEDA",
    "gcpSecretManager": "read from GCP Secret Manager by KEDA",
    "awsSecretManager": "read from AWS Secrets Manager by KEDA",
    "boundServiceAccountToken": "a service account token KEDA requests",
    "oauth2": "an OAuth2 token KEDA requests",
}
# The parameters whose value the converter reads, and from which kinds of object: none is a credential. A
# custom header's NAME may be read from a Secret (the header's value never is: it stays a Secret reference);
# a basic auth username or a custom header's value only from a ConfigMap (what is in a ConfigMap is no secret).
READABLE = {"customAuthHeader": ("Secret", "ConfigMap"), "customAuthValue": ("ConfigMap",), "username": ("ConfigMap",)}
KEY_VALUE_KINDS = ("Secret", "ConfigMap")


@dataclass(frozen=True, order=True)
class Reference:
    """A key of a Secret or ConfigMap: where a credential is, never what it is."""

    kind: str  # Secret | ConfigMap
    namespace: str
    name: str
    key: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} key {self.key!r}"


@dataclass
class AuthIndex:
    """The (Cluster)TriggerAuthentications the input holds, by ``(kind, namespace, name)`` (namespace "" for
    a cluster-scoped one)."""

    objects: dict[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    keda_namespace: str = DEFAULT_KEDA_NAMESPACE
    searched: str = "the input files"  # what was searched, for the message when one is missing
    # The ConfigMaps and Secrets the input holds, by (kind, namespace, name): read for READABLE keys only.
    key_values: dict[tuple[str, str, str], Mapping[str, Any]] = field(default_factory=dict)

    def add(self, document: Mapping[str, Any]) -> None:
        kind = str(document.get("kind"))
        metadata = document.get("metadata") or {}
        namespace = "" if kind == CLUSTER_TRIGGER_AUTHENTICATION else (metadata.get("namespace") or "default")
        key = (kind, namespace, str(metadata.get("name")))
        if kind in KEY_VALUE_KINDS:
            self.key_values[key] = document
        else:
            self.objects[key] = document

    def readable(self, parameter: str, reference: Reference) -> str | None:
        """The value of ``reference`` when ``parameter`` is one the converter may read from that kind of object
        (:data:`READABLE`: never a credential) and the object is in the input; else None. Only the one key
        named is looked at."""
        if reference.kind not in READABLE.get(parameter, ()):
            return None
        document = self.key_values.get((reference.kind, reference.namespace, reference.name))
        if document is None:
            return None
        string_data = document.get("stringData")  # what the API server merges into data, winning over it
        if isinstance(string_data, Mapping) and isinstance(string_data.get(reference.key), str):
            return str(string_data[reference.key])
        data = document.get("data")
        raw = data.get(reference.key) if isinstance(data, Mapping) else None
        if not isinstance(raw, str):
            return None
        if reference.kind == "ConfigMap":
            return raw
        try:  # a Secret's data is base64
            return base64.b64decode(raw, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None


@dataclass
class AuthParams:
    """A trigger's authentication parameters, each a reference; ``source`` names the object they are from."""

    source: str
    references: dict[str, Reference] = field(default_factory=dict)
    missing: bool = False  # the object named is not in the input (reported as lost where it is named)
    index: AuthIndex | None = None  # where the READABLE parameters' values are looked up

    def readable(self, parameter: str) -> str | None:
        """The value of ``parameter`` when the converter may read it (:meth:`AuthIndex.readable`)."""
        reference = self.references.get(parameter)
        return self.index.readable(parameter, reference) if reference and self.index else None


def resolve(raw: object, namespace: str, index: AuthIndex, path: str, conversion: Conversion) -> AuthParams | None:
    """The parameters ``authenticationRef`` (``raw``) gives a trigger of a ScaledObject in ``namespace``."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str) or not raw.get("name"):
        conversion.errors.append(f"{path}.name: Required value")
        return None
    kind = raw.get("kind") or TRIGGER_AUTHENTICATION
    if kind not in AUTH_KINDS:
        conversion.errors.append(
            f"{path}.kind: {kind!r}: must be TriggerAuthentication or ClusterTriggerAuthentication"
        )
        return None
    scope = "" if kind == CLUSTER_TRIGGER_AUTHENTICATION else namespace
    label = f"{kind} {raw['name']}" if not scope else f"{kind} {scope}/{raw['name']}"
    document = index.objects.get((kind, scope, raw["name"]))
    if document is None:
        conversion.lost(
            path,
            f"{label} is not in {index.searched} (give its file, or --from-cluster): the backend is written "
            "without its credentials",
        )
        return AuthParams(label, missing=True)
    spec = document.get("spec")
    params = AuthParams(label, index=index)
    if not isinstance(spec, Mapping):
        return params
    objects_namespace = scope or index.keda_namespace
    for key, reason in UNMOUNTABLE.items():
        value = spec.get(key)
        if value and not (key == "podIdentity" and isinstance(value, Mapping) and value.get("provider") == "none"):
            names = ", ".join(_parameters(value)) or key
            conversion.lost(
                f"{path} ({label} spec.{key})",
                f"{names}: {reason}; the autoscaler reads credentials "
                "from files or Secrets only (mount it as a file and set the backend's field)",
            )
    for key, kind_name in (("secretTargetRef", "Secret"), ("configMapTargetRef", "ConfigMap")):
        for item in spec.get(key) or []:
            if isinstance(item, Mapping) and item.get("parameter") and item.get("name") and item.get("key"):
                params.references[str(item["parameter"])] = Reference(
                    kind_name, objects_namespace, str(item["name"]), str(item["key"])
                )
    return params


def _parameters(value: object) -> Iterable[str]:
    """The parameter names a source lists (``env: [{parameter: …}]``, a vault's ``secrets: [{parameter: …}]``)."""
    items = value if isinstance(value, list) else (value.get("secrets") if isinstance(value, Mapping) else None)
    for item in items or []:
        if isinstance(item, Mapping) and item.get("parameter"):
            yield str(item["parameter"])


def readable_references(document: Mapping[str, Any], keda_namespace: str) -> list[Reference]:
    """The keys of ConfigMaps and Secrets a (Cluster)TriggerAuthentication names for a :data:`READABLE`
    parameter: what ``--from-cluster`` reads (each of those keys alone)."""
    kind = document.get("kind")
    namespace = (
        keda_namespace
        if kind == CLUSTER_TRIGGER_AUTHENTICATION
        else str((document.get("metadata") or {}).get("namespace") or "default")
    )
    spec = document.get("spec")
    found: list[Reference] = []
    for key, kind_name in (("secretTargetRef", "Secret"), ("configMapTargetRef", "ConfigMap")):
        for item in (spec.get(key) if isinstance(spec, Mapping) else None) or []:
            if (
                isinstance(item, Mapping)
                and kind_name in READABLE.get(str(item.get("parameter")), ())
                and item.get("name")
                and item.get("key")
            ):
                found.append(Reference(kind_name, namespace, str(item["name"]), str(item["key"])))
    return sorted(set(found))
