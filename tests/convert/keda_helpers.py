"""The KEDA conversion tests' common parts: the queue worker of issue 36 as its team wrote it for KEDA, and
converting and checking an object the way ``autoscaler convert`` and then ``autoscaler run`` read it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from autoscaler.convert.keda import convert_scaled_object
from autoscaler.convert.keda_auth import AuthIndex
from autoscaler.convert.keda_backends import DEFAULT_MOUNT_DIR, BackendRegistry
from autoscaler.convert.model import Conversion
from autoscaler.prometheus.backends import read_backends
from autoscaler.values.fields import ErrorList
from tests.convert.helpers import SCALED_OBJECTS, documents, load_written

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


def spec_of(conversion: Conversion, tmp_path: Path) -> dict[str, Any]:
    assert conversion.errors == []
    assert conversion.target is not None
    load_written(tmp_path, conversion.target)  # the project's own validation, queries required
    spec: dict[str, Any] = conversion.target["spec"]
    return spec


def backends_of(registry: BackendRegistry) -> dict[str, Any]:
    fragment: dict[str, Any] = registry.fragment(DEFAULT_MOUNT_DIR)["prometheus"]["backends"]
    errors = ErrorList()
    assert read_backends(fragment, "prometheus.backends", errors) is not None, [str(e) for e in errors.items]
    return fragment


def note(conversion: Conversion, path: str) -> str:
    return " | ".join(f"{n.kind.value}: {n.message}" for n in conversion.notes if n.path == path)
