"""A trigger's ``authenticationRef``: the (Cluster)TriggerAuthentication it names, read for the *names* of the
Secrets and ConfigMaps its parameters come from — never their values. The converted backend reads each
credential from a file that Secret key is mounted at.

KEDA resolves a parameter from ``secretTargetRef`` and ``configMapTargetRef`` (a key of an object in the
ScaledObject's namespace, or for a ClusterTriggerAuthentication in KEDA's own namespace,
``KEDA_CLUSTER_OBJECT_NAMESPACE``, ``keda`` by default), or from a container's environment, a file, a vault, a
cloud identity. Only the first two name something a file can be mounted from; each other source is reported.
"""

from __future__ import annotations

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

    def add(self, document: Mapping[str, Any]) -> None:
        kind = str(document.get("kind"))
        metadata = document.get("metadata") or {}
        namespace = "" if kind == CLUSTER_TRIGGER_AUTHENTICATION else (metadata.get("namespace") or "default")
        self.objects[(kind, namespace, str(metadata.get("name")))] = document


@dataclass
class AuthParams:
    """A trigger's authentication parameters, each a reference; ``source`` names the object they are from."""

    source: str
    references: dict[str, Reference] = field(default_factory=dict)
    missing: bool = False  # the object named is not in the input (reported as lost where it is named)


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
    params = AuthParams(label)
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
