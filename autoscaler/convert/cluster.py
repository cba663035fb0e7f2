"""``--from-cluster``: the HPAs, ScaledObjects (with KEDA's TriggerAuthentications) and prometheus-adapter
ConfigMap a cluster holds, read
through the kubeconfig with the project's Kubernetes client (every call with a timeout)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.convert.keda_auth import DEFAULT_KEDA_NAMESPACE, readable_references
from autoscaler.kube.api import KubeApi, KubeError, ResourcePath
from autoscaler.kube.client import make_api_client

HPAS = ResourcePath("autoscaling", "v2", "horizontalpodautoscalers")
SCALED_OBJECTS = ResourcePath("keda.sh", "v1alpha1", "scaledobjects")
TRIGGER_AUTHENTICATIONS = ResourcePath("keda.sh", "v1alpha1", "triggerauthentications")
CLUSTER_TRIGGER_AUTHENTICATIONS = ResourcePath("keda.sh", "v1alpha1", "clustertriggerauthentications")
CONFIGMAPS = ResourcePath("", "v1", "configmaps")
SECRETS = ResourcePath("", "v1", "secrets")
# How prometheus-adapter's Helm chart and manifests label the adapter's objects.
ADAPTER_LABEL = "app.kubernetes.io/name=prometheus-adapter"


@dataclass
class ClusterQuery:
    kubeconfig: str | None
    context: str | None
    namespace: str | None  # None: every namespace
    selector: str | None  # label selector for HPAs and ScaledObjects
    adapter_configmap: str | None  # NAMESPACE/NAME; None: find it by its label
    find_adapter: bool = True  # False when the configuration was given as a file
    keda_namespace: str = DEFAULT_KEDA_NAMESPACE  # where a ClusterTriggerAuthentication's objects are


@dataclass
class ClusterObjects:
    documents: list[tuple[dict[str, Any], str]]
    notes: list[str]


async def _list(
    api: KubeApi, path: ResourcePath, namespace: str | None, selector: str | None, kind: str, api_version: str
) -> list[dict[str, Any]]:
    query = [("labelSelector", selector)] if selector else []
    body = await api.get(path.collection(namespace), query=query, resource=path.label)
    items = list((body or {}).get("items") or [])
    for item in items:  # a list's items carry no kind of their own
        item.setdefault("kind", kind)
        item.setdefault("apiVersion", api_version)
    return items


async def read_cluster(query: ClusterQuery, request_seconds: float = 15.0) -> ClusterObjects:
    """Raises :class:`KubeError` when the cluster cannot be read (the message says why)."""
    client = await make_api_client(query.kubeconfig, query.context)
    notes: list[str] = []
    documents: list[tuple[dict[str, Any], str]] = []
    async with client:
        api = KubeApi(client, timeout=request_seconds)
        where = f"namespace {query.namespace}" if query.namespace else "all namespaces"
        for item in await _list(
            api, HPAS, query.namespace, query.selector, "HorizontalPodAutoscaler", "autoscaling/v2"
        ):
            documents.append((item, "cluster"))
        try:
            for item in await _list(
                api, SCALED_OBJECTS, query.namespace, query.selector, "ScaledObject", "keda.sh/v1alpha1"
            ):
                documents.append((item, "cluster"))
            authentications = await _trigger_authentications(api, query.namespace, notes)
            documents.extend(authentications)
            documents.extend(await _readable_keys(api, authentications, query.keda_namespace, notes))
        except KubeError as exc:
            if not exc.not_found:
                raise
            notes.append("the cluster serves no ScaledObjects (KEDA is not installed): none converted")
        if query.find_adapter or query.adapter_configmap:
            documents.extend(await _adapter_configmaps(api, query.adapter_configmap, notes))
        notes.append(f"read {len(documents)} object(s) from {where}")
    return ClusterObjects(documents, notes)


async def _trigger_authentications(
    api: KubeApi, namespace: str | None, notes: list[str]
) -> list[tuple[dict[str, Any], str]]:
    """The (Cluster)TriggerAuthentications the ScaledObjects may name: their Secret names and keys, never a
    Secret itself. One that cannot be listed leaves its references unresolved (each reported per trigger)."""
    found: list[tuple[dict[str, Any], str]] = []
    for path, scope, kind in (
        (TRIGGER_AUTHENTICATIONS, namespace, "TriggerAuthentication"),
        (CLUSTER_TRIGGER_AUTHENTICATIONS, None, "ClusterTriggerAuthentication"),
    ):
        try:
            found.extend((item, "cluster") for item in await _list(api, path, scope, None, kind, "keda.sh/v1alpha1"))
        except KubeError as exc:
            if not exc.not_found:
                notes.append(f"listing {path.label} failed ({exc}): the triggers naming one are converted without it")
    return found


async def _readable_keys(
    api: KubeApi, authentications: list[tuple[dict[str, Any], str]], keda_namespace: str, notes: list[str]
) -> list[tuple[dict[str, Any], str]]:
    """The few keys of ConfigMaps and Secrets the TriggerAuthentications name for a parameter that is no
    credential (``keda_auth.READABLE``: a custom header's name, a ConfigMap's username or header value), each
    object kept with that one key alone. No other value is kept, logged or written; one that cannot be read
    leaves its trigger's loss reported as without it."""
    wanted = sorted({ref for document, _ in authentications for ref in readable_references(document, keda_namespace)})
    kept: dict[tuple[str, str, str], dict[str, Any]] = {}
    for ref in wanted:
        path = SECRETS if ref.kind == "Secret" else CONFIGMAPS
        try:
            body = await api.get(path.item(ref.namespace, ref.name), resource=path.label)
        except KubeError as exc:
            notes.append(f"reading {ref.kind} {ref.namespace}/{ref.name} failed ({exc}): converted without it")
            continue
        document = kept.setdefault(
            (ref.kind, ref.namespace, ref.name),
            {"apiVersion": "v1", "kind": ref.kind, "metadata": {"namespace": ref.namespace, "name": ref.name}},
        )
        for field in ("data", "stringData"):
            values = (body or {}).get(field)
            if isinstance(values, dict) and ref.key in values:
                document.setdefault(field, {})[ref.key] = values[ref.key]
    return [(document, "cluster") for document in kept.values()]


async def _adapter_configmaps(
    api: KubeApi, named: str | None, notes: list[str]
) -> Sequence[tuple[dict[str, Any], str]]:
    if named:
        namespace, _, name = named.partition("/")
        body = await api.get(CONFIGMAPS.item(namespace, name), resource=CONFIGMAPS.label)
        body.setdefault("kind", "ConfigMap")
        return [(body, f"cluster ConfigMap {namespace}/{name}")]
    found = await _list(api, CONFIGMAPS, None, ADAPTER_LABEL, "ConfigMap", "v1")
    with_config = [cm for cm in found if "config.yaml" in (cm.get("data") or {})]
    for cm in with_config:
        meta = cm.get("metadata") or {}
        notes.append(
            f"found prometheus-adapter's ConfigMap {meta.get('namespace')}/{meta.get('name')} (label {ADAPTER_LABEL})"
        )
    return [(cm, "cluster") for cm in with_config]
