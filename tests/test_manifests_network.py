"""Who may reach the service's port, as the manifests say it (``manifests/networkpolicy.yaml``): in every
install (default, namespaced, sharded) the NetworkPolicy selects every pod of the service, restricts ingress
only, and lets in Prometheus' namespace (the one the ConfigMap's Prometheus URL names) on the ``http``
container port, where /metrics, /api/targets and the probes are; nothing else. The kubelet's probes need no
rule (a pod's own node is always let in), and they use that port."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from autoscaler.service.settings import parse_service_settings
from tests.manifests import (
    Doc,
    default_install,
    find,
    namespaced_install,
    one,
    service_container,
    settings_text,
    sharded_install,
)

INSTALLS: dict[str, Callable[[], list[Doc]]] = {
    "default": default_install,
    "namespaced": namespaced_install,
    "sharded": sharded_install,
}


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, "only matchLabels is read here"
    return selector.get("matchLabels", {}).items() <= labels.items()


def prometheus_namespace(docs: list[Doc]) -> str:
    """The namespace of the in-cluster Service the settings' Prometheus URL names (name.namespace.svc)."""
    host = urlsplit(parse_service_settings(yaml.safe_load(settings_text(docs))).prometheus.url).hostname or ""
    parts = host.split(".")
    assert len(parts) >= 3 and parts[2] == "svc", f"not an in-cluster Service address: {host}"
    return parts[1]


@pytest.mark.parametrize("variant", INSTALLS)
def test_the_network_policy_covers_every_pod_of_the_service(variant: str) -> None:
    docs = INSTALLS[variant]()
    policy = one(docs, "NetworkPolicy", "autoscaler")
    deployments = find(docs, "Deployment")
    assert deployments
    for deployment in deployments:
        assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selects(policy["spec"]["podSelector"], labels), deployment["metadata"]["name"]


@pytest.mark.parametrize("variant", INSTALLS)
def test_only_prometheus_namespace_reaches_the_http_port(variant: str) -> None:
    docs = INSTALLS[variant]()
    spec = one(docs, "NetworkPolicy", "autoscaler")["spec"]
    # Ingress only: the service's own calls (API server, Prometheus) go wherever the cluster puts them.
    assert spec["policyTypes"] == ["Ingress"] and "egress" not in spec
    [rule] = spec["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": prometheus_namespace(docs)}}}
    ]
    container = service_container(docs)
    ports = {p["name"]: p for p in container["ports"]}
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}] and ports["http"]["protocol"] == "TCP"
    # The probes are served on that same port; the kubelet reaches it from the node, which needs no rule.
    assert container["livenessProbe"]["httpGet"]["port"] == container["readinessProbe"]["httpGet"]["port"] == "http"
