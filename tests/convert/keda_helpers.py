"""The KEDA conversion tests' common parts: the queue worker of issue 36 as its team wrote it for KEDA, and
converting and checking an object the way ``autoscaler convert`` and then ``autoscaler run`` read it."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from autoscaler.convert.keda import convert_scaled_object
from autoscaler.convert.keda_auth import AuthIndex
from autoscaler.convert.keda_backends import DEFAULT_MOUNT_DIR, BackendRegistry
from autoscaler.convert.model import Conversion
from autoscaler.prometheus.backends import read_backends
from autoscaler.values.fields import ErrorList
from tests.convert.helpers import SCALED_OBJECTS, documents, load_written
from tests.schemas import crd_version_schema, custom_resource_errors

CRD = Path(__file__).resolve().parents[2] / "manifests" / "crd.yaml"

SECRETS = f"{DEFAULT_MOUNT_DIR}/secret"


def scaled_object(name: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for d in documents(SCALED_OBJECTS.read_text()) if d["metadata"]["name"] == name))


def queue_worker(**spec: Any) -> dict[str, Any]:
    """The queue worker of issue 36, as its team wrote it for KEDA."""
    document: dict[str, Any] = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "worker", "namespace": "jobs"},
        "spec": {
            "scaleTargetRef": {"name": "worker"},
            "maxReplicaCount": 20,
            "triggers": [
                {
                    "type": "prometheus",
                    "name": "queue",
                    "metadata": {
                        "serverAddress": "http://prometheus.monitoring.svc.cluster.local:9090",
                        "query": 'sum(rabbitmq_queue_messages_ready{queue="jobs"})',
                        "threshold": "25",
                    },
                }
            ],
        },
    }
    document["spec"].update(spec)
    return document


def run(
    document: dict[str, Any], *auths: dict[str, Any], registry: BackendRegistry | None = None
) -> tuple[Conversion, BackendRegistry]:
    index = AuthIndex()
    for auth in auths:
        index.add(auth)
    registry = registry if registry is not None else BackendRegistry()
    return convert_scaled_object(document, "so.yaml", index, registry), registry


@functools.cache
def target_schema() -> dict[str, Any]:
    """The ScalingTarget CRD's schema (manifests/crd.yaml), which the API server holds a target to."""
    crd = next(d for d in yaml.safe_load_all(CRD.read_text()) if d and d["spec"]["names"]["kind"] == "ScalingTarget")
    return crd_version_schema(crd, "v1alpha1")


def spec_of(conversion: Conversion, tmp_path: Path) -> dict[str, Any]:
    """The converted spec, after checking the target as `kubectl apply` (the CRD's schema: nothing refused,
    nothing pruned) and `autoscaler run` (the project's own validation, queries required) read it."""
    assert conversion.errors == []
    assert conversion.target is not None
    assert custom_resource_errors(conversion.target, target_schema()) == []
    load_written(tmp_path, conversion.target)
    spec: dict[str, Any] = conversion.target["spec"]
    return spec


def backends_of(registry: BackendRegistry, *, secret_refs: bool = False) -> dict[str, Any]:
    """The backends fragment, after checking it with the service's own settings parser."""
    fragment: dict[str, Any] = registry.fragment(DEFAULT_MOUNT_DIR, secret_refs)["prometheus"]["backends"]
    errors = ErrorList()
    assert read_backends(fragment, "prometheus.backends", errors) is not None, [str(e) for e in errors.items]
    return fragment


def note(conversion: Conversion, path: str) -> str:
    return " | ".join(f"{n.kind.value}: {n.message}" for n in conversion.notes if n.path == path)
