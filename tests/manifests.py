"""Reading the shipped manifests as the cluster would get them: the YAML files, and a small renderer for the
kustomize features ``manifests/`` uses (resources, ``namespace``, components, strategic-merge ``patches``
including ``$patch: delete``). ``tests/test_manifests.py`` checks this renderer against ``kubectl kustomize``
whenever kubectl is installed, so the tests see what ``kubectl apply -k`` would apply.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kube_emulator.strategic_merge import apply_strategic_merge_patch, schema_for

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "manifests"
NAMESPACED = MANIFESTS / "namespaced"
MONITORING = MANIFESTS / "monitoring"
SHARDED = MANIFESTS / "sharded"
EXAMPLES = MANIFESTS / "examples"

Doc = dict[str, Any]

# Kinds without a namespace (the namespace transformer leaves them alone).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "StorageClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
    }
)
# Where strategic merge finds a kind's list merge keys (the emulator's per-kind patch schemas).
_STORAGE_KEYS = {
    "Deployment": "apps/deployments",
    "StatefulSet": "apps/statefulsets",
    "Pod": "/pods",
    "Service": "/services",
    "Namespace": "/namespaces",
}


def load_documents(path: Path) -> list[Doc]:
    """The non-empty documents of a (multi-document) YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def ident(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name): what kustomize matches resources by."""
    meta = doc.get("metadata") or {}
    group = str(doc.get("apiVersion", "")).rpartition("/")[0]
    return group, str(doc.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))


def normalized(value: Any) -> Any:
    """``value`` with keys sorted and named list entries in name order: two renderings compare equal when
    they differ only in order."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [normalized(v) for v in value]
        if items and all(isinstance(v, dict) and "name" in v for v in items):
            items.sort(key=lambda v: str(v["name"]))  # kustomize prepends patched list entries; order is not ours
        return items
    return value


def by_id(docs: Iterable[Doc]) -> dict[tuple[str, str, str, str], Any]:
    """Each object, normalized, by what kustomize matches it by."""
    return {ident(d): normalized(d) for d in docs}


def build(directory: Path) -> list[Doc]:
    """Render the kustomization (or component) in ``directory``."""
    spec = load_documents(directory / "kustomization.yaml")[0]
    docs: list[Doc] = []
    for entry in spec.get("resources") or []:
        path = (directory / entry).resolve()
        docs.extend(build(path) if path.is_dir() else copy.deepcopy(load_documents(path)))
    for entry in spec.get("components") or []:
        docs = _apply_component((directory / entry).resolve(), docs)
    for patch in spec.get("patches") or []:
        for body in load_documents((directory / patch["path"]).resolve()):
            docs = _patch(docs, body)
    namespace = spec.get("namespace")
    if namespace:
        docs = [_set_namespace(doc, namespace) for doc in docs]
    return docs


def build_with_components(base: Path, components: Sequence[Path]) -> list[Doc]:
    """What a user's own kustomization ``resources: [base]`` + ``components: [...]`` renders."""
    docs = build(base)
    for component in components:
        docs = _apply_component(component, docs)
    return docs


def _apply_component(directory: Path, docs: list[Doc]) -> list[Doc]:
    spec = load_documents(directory / "kustomization.yaml")[0]
    assert spec.get("kind") == "Component", f"{directory} is not a kustomize Component"
    docs = list(docs)
    for entry in spec.get("resources") or []:
        docs.extend(copy.deepcopy(load_documents((directory / entry).resolve())))
    for patch in spec.get("patches") or []:
        for body in load_documents((directory / patch["path"]).resolve()):
            docs = _patch(docs, body)
    return docs


def _patch(docs: list[Doc], body: Doc) -> list[Doc]:
    """A strategic-merge patch naming its target by apiVersion, kind, name (and namespace)."""
    group, kind, namespace, name = ident(body)
    matches = [
        i
        for i, doc in enumerate(docs)
        if ident(doc)[0] == group
        and ident(doc)[1] == kind
        and ident(doc)[3] == name
        and (not namespace or ident(doc)[2] in ("", namespace))
    ]
    assert len(matches) == 1, f"patch for {kind} {name} matches {len(matches)} resources"
    index = matches[0]
    if body.get("$patch") == "delete":
        return docs[:index] + docs[index + 1 :]
    merged = apply_strategic_merge_patch(docs[index], body, schema_for(_STORAGE_KEYS.get(kind, "")))
    return [*docs[:index], merged, *docs[index + 1 :]]


def _set_namespace(doc: Doc, namespace: str) -> Doc:
    doc = copy.deepcopy(doc)
    if doc.get("kind") not in CLUSTER_SCOPED:
        doc.setdefault("metadata", {})["namespace"] = namespace
    if doc.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
        for subject in doc.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount":
                subject["namespace"] = namespace
    return doc


def default_install() -> list[Doc]:
    """``kubectl kustomize manifests/``."""
    return build(MANIFESTS)


def namespaced_install() -> list[Doc]:
    """The default install with the ``namespaced`` component."""
    return build_with_components(MANIFESTS, [NAMESPACED])


def kustomize(base: Path, components: Sequence[Path] = ()) -> list[Doc]:
    """What the real ``kubectl kustomize`` renders for a user's own kustomization with ``resources: [base]``
    and ``components``: for the sharded component, whose patches pick their targets by label selector (a
    kustomize feature this renderer leaves out). Raises :class:`FileNotFoundError` without kubectl."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise FileNotFoundError("kubectl is not installed (Debian package 'kubernetes-client')")
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "resources": [os.path.relpath(base, scratch)],
                    "components": [os.path.relpath(c, scratch) for c in components],
                }
            )
        )
        result = subprocess.run(
            [kubectl, "kustomize", scratch], capture_output=True, text=True, timeout=60, check=False
        )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def sharded_install() -> list[Doc]:
    """The default install with the ``sharded`` component (rendered by ``kubectl kustomize``)."""
    return kustomize(MANIFESTS, [SHARDED])


def monitored_install() -> list[Doc]:
    """The default install with the ``monitoring`` component."""
    return build_with_components(MANIFESTS, [MONITORING])


def find(docs: Iterable[Doc], kind: str, name: str | None = None) -> list[Doc]:
    return [d for d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: Iterable[Doc], kind: str, name: str | None = None) -> Doc:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def service_container(docs: Iterable[Doc], deployment_name: str = "autoscaler") -> Doc:
    """The autoscaler container of the Deployment."""
    deployment = one(docs, "Deployment", deployment_name)
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def settings_text(docs: Iterable[Doc]) -> str:
    """The settings file as mounted in the pod (the ConfigMap key the Deployment's --config names)."""
    docs = list(docs)
    container = service_container(docs)
    args = list(container["args"])
    config_path = Path(args[args.index("--config") + 1])
    mount = next(m for m in container["volumeMounts"] if config_path.is_relative_to(m["mountPath"]))
    pod = one(docs, "Deployment", "autoscaler")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    configmap = one(docs, "ConfigMap", volume["configMap"]["name"])
    return str(configmap["data"][str(config_path.relative_to(mount["mountPath"]))])


def container_environment(docs: Iterable[Doc]) -> dict[str, str]:
    """The container's plain environment variables (``value``, not ``valueFrom``)."""
    return {e["name"]: str(e["value"]) for e in service_container(docs).get("env") or [] if "value" in e}
