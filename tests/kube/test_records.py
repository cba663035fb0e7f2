"""Trimmed pod records: what the decisions read, and shared parts for pods of one template."""

from __future__ import annotations

from typing import Any

from autoscaler.core.observation import ConditionStatus, PodPhase
from autoscaler.kube.records import trim_pod


def pod(name: str, labels: dict[str, str], cpu: str = "500m", *, ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": labels,
            "ownerReferences": [{"uid": "rs-1", "kind": "ReplicaSet", "name": "web-abc"}],
        },
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "migrate", "resources": {"requests": {"cpu": "2"}}},
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": "2026-01-01T00:00:10Z"}],
        },
    }


def test_a_pod_record_keeps_what_the_decision_reads() -> None:
    record = trim_pod(pod("web-1", {"app": "web"}))
    assert record is not None
    assert (record.namespace, record.name, dict(record.labels)) == ("shop", "web-1", {"app": "web"})
    info = record.info
    assert (info.phase, info.ready, info.deleting) == (PodPhase.RUNNING, ConditionStatus.TRUE, False)
    assert info.ready_since is not None and info.started_at is not None
    assert info.ready_since - info.started_at == 10
    assert [(c.name, dict(c.requests), c.sidecar) for c in info.containers] == [
        ("app", {"cpu": 500, "memory": 1024**3 * 1000}, False),
        ("proxy", {"cpu": 100}, True),
    ]


def test_pods_of_one_template_share_labels_and_containers_and_others_do_not() -> None:
    a, b = trim_pod(pod("web-1", {"app": "web"})), trim_pod(pod("web-2", {"app": "web"}))
    c = trim_pod(pod("web-3", {"app": "web"}, cpu="750m"))
    d = trim_pod(pod("api-1", {"app": "api"}))
    assert a is not None and b is not None and c is not None and d is not None
    assert a.labels is b.labels and a.info.containers is b.info.containers
    assert c.info.containers is not a.info.containers and c.info.containers[0].requests["cpu"] == 750
    assert d.labels is not a.labels and dict(d.labels) == {"app": "api"}


def test_an_unparseable_request_counts_as_absent() -> None:
    record = trim_pod(pod("web-1", {"app": "web"}, cpu="lots"))
    assert record is not None
    assert dict(record.info.containers[0].requests) == {"memory": 1024**3 * 1000}
