"""KEDA prometheus triggers' connections converted: serverAddress, namespace, customHeaders, queryParameters,
unsafeSsl, timeout and the (Cluster)TriggerAuthentication an authenticationRef names, as named backends whose
credentials are the files Secret keys are mounted at (references, never values). Each backends fragment passes
the service's settings parser; what cannot be a file is reported per trigger."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from autoscaler.convert.keda_backends import DEFAULT_MOUNT_DIR, BackendRegistry
from tests.convert.keda_helpers import SECRETS, backends_of, queue_worker, run, spec_of


def test_each_way_of_reaching_prometheus_is_a_backend(tmp_path: Path) -> None:
    registry = BackendRegistry()
    tenant = queue_worker()
    tenant["spec"]["triggers"][0]["metadata"].update(
        {
            "serverAddress": "https://thanos-query.monitoring:9091/",
            "namespace": "team-a",
            "customHeaders": "X-Scope-OrgID=team-a, X-Source = keda",
            "queryParameters": "dedup=true,namespace=ignored",
            "unsafeSsl": "true",
            "timeout": "2500",
        }
    )
    spec = spec_of(run(tenant, registry=registry)[0], tmp_path)
    assert spec["metrics"][0]["external"]["backend"] == "thanos-query-monitoring"
    same = run(copy.deepcopy(tenant), registry=registry)[0]  # the same connection: the same backend
    assert spec_of(same, tmp_path)["metrics"][0]["external"]["backend"] == "thanos-query-monitoring"
    other = copy.deepcopy(tenant)
    other["spec"]["triggers"][0]["metadata"]["namespace"] = "team-b"
    other["spec"]["triggers"][0]["metadata"]["timeout"] = "1m30s"
    assert spec_of(run(other, registry=registry)[0], tmp_path)["metrics"][0]["external"]["backend"] == (
        "thanos-query-monitoring-2"
    )
    assert backends_of(registry) == {
        "thanos-query-monitoring": {
            "url": "https://thanos-query.monitoring:9091",
            "tls": {"insecureSkipVerify": True},
            "headers": {"X-Scope-OrgID": "team-a", "X-Source": "keda"},
            # KEDA sends namespace= first: the tenant Thanos reads
            "queryParameters": {"dedup": "true", "namespace": "team-a"},
            "timeoutSeconds": 2.5,
        },
        "thanos-query-monitoring-2": {
            "url": "https://thanos-query.monitoring:9091",
            "tls": {"insecureSkipVerify": True},
            "headers": {"X-Scope-OrgID": "team-a", "X-Source": "keda"},
            "queryParameters": {"dedup": "true", "namespace": "team-b"},
            "timeoutSeconds": 90,
        },
    }
    assert registry.users["thanos-query-monitoring"] == [
        "ScaledObject jobs/worker spec.triggers[0]",
        "ScaledObject jobs/worker spec.triggers[0]",
    ]


def trigger_authentication(kind: str, name: str, namespace: str | None, spec: dict[str, Any]) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "keda.sh/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}


def test_trigger_authentication_bearer_and_tls_by_reference(tmp_path: Path) -> None:
    document = queue_worker()
    trigger = document["spec"]["triggers"][0]
    trigger["metadata"]["authModes"] = "bearer,tls"
    trigger["authenticationRef"] = {"name": "prom-auth"}
    auth = trigger_authentication(
        "TriggerAuthentication",
        "prom-auth",
        "jobs",
        {
            "secretTargetRef": [
                {"parameter": "bearerToken", "name": "prom-token", "key": "token"},
                {"parameter": "cert", "name": "prom-client", "key": "tls.crt"},
                {"parameter": "key", "name": "prom-client", "key": "tls.key"},
            ],
            "configMapTargetRef": [{"parameter": "ca", "name": "prom-ca", "key": "ca.crt"}],
        },
    )
    conversion, registry = run(document, auth)
    spec_of(conversion, tmp_path)
    assert conversion.losses == []
    assert backends_of(registry) == {
        "prometheus-monitoring": {
            "url": "http://prometheus.monitoring.svc.cluster.local:9090",
            "bearerTokenFile": f"{SECRETS}/jobs/prom-token/token",
            "tls": {
                "caFile": f"{DEFAULT_MOUNT_DIR}/configmap/jobs/prom-ca/ca.crt",
                "certFile": f"{SECRETS}/jobs/prom-client/tls.crt",
                "keyFile": f"{SECRETS}/jobs/prom-client/tls.key",
            },
        }
    }
    assert [str(ref) for _, ref in registry.mounts(DEFAULT_MOUNT_DIR)] == [
        "ConfigMap jobs/prom-ca key 'ca.crt'",
        "Secret jobs/prom-client key 'tls.crt'",
        "Secret jobs/prom-client key 'tls.key'",
        "Secret jobs/prom-token key 'token'",
    ]
    # with Secret references (convert's default), the token is read through the API; TLS stays files
    by_reference = backends_of(registry, secret_refs=True)["prometheus-monitoring"]
    assert by_reference["bearerTokenSecret"] == {"namespace": "jobs", "name": "prom-token", "key": "token"}
    assert (
        "bearerTokenFile" not in by_reference
        and by_reference["tls"] == backends_of(registry)["prometheus-monitoring"]["tls"]
    )
    assert [str(ref) for ref in registry.secret_reads(True)] == ["Secret jobs/prom-token key 'token'"]
    assert "Secret jobs/prom-token key 'token'" not in [str(ref) for _, ref in registry.mounts(DEFAULT_MOUNT_DIR, True)]


def test_cluster_trigger_authentication_secrets_are_in_kedas_namespace(tmp_path: Path) -> None:
    document = queue_worker()
    document["spec"]["triggers"][0]["metadata"]["authModes"] = "bearer"
    document["spec"]["triggers"][0]["authenticationRef"] = {"name": "shared", "kind": "ClusterTriggerAuthentication"}
    auth = trigger_authentication(
        "ClusterTriggerAuthentication",
        "shared",
        None,
        {"secretTargetRef": [{"parameter": "token", "name": "prom", "key": "bearer"}]},
    )
    conversion, registry = run(document, auth)
    spec_of(conversion, tmp_path)
    assert backends_of(registry)["prometheus-monitoring"]["bearerTokenFile"] == f"{SECRETS}/keda/prom/bearer"


@pytest.mark.parametrize(
    ("modes", "auth_spec", "path", "words"),
    [
        (None, None, "spec.triggers[0].authenticationRef", "TriggerAuthentication jobs/prom-auth is not in"),
        (
            "bearer",
            {"env": [{"parameter": "bearerToken", "name": "TOKEN"}]},
            "spec.triggers[0].authenticationRef (TriggerAuthentication jobs/prom-auth spec.env)",
            "bearerToken: read from the scale target's container environment",
        ),
        (
            "custom",  # the header's name is in a Secret too: the converter cannot know it
            {
                "secretTargetRef": [
                    {"parameter": "customAuthHeader", "name": "s", "key": "header"},
                    {"parameter": "customAuthValue", "name": "s", "key": "value"},
                ]
            },
            "spec.triggers[0].metadata.authModes",
            "add headerSecrets: {<that name>: {namespace: jobs, name: s, key: value}}",
        ),
        (
            "oauth",
            {"secretTargetRef": [{"parameter": "clientID", "name": "s", "key": "id"}]},
            "spec.triggers[0].metadata.authModes",
            "oauth: KEDA's oauth authentication has no equivalent",
        ),
        (
            "basic",
            {
                "configMapTargetRef": [{"parameter": "username", "name": "c", "key": "user"}],
                "secretTargetRef": [{"parameter": "password", "name": "s", "key": "password"}],
            },
            "spec.triggers[0].metadata.authModes",
            "basic: the username is ConfigMap jobs/c key 'user': the settings read a username from a Secret",
        ),
    ],
)
def test_credentials_without_an_equivalent_are_reported(
    modes: str | None, auth_spec: dict[str, Any] | None, path: str, words: str
) -> None:
    document = queue_worker()
    trigger = document["spec"]["triggers"][0]
    if modes:
        trigger["metadata"]["authModes"] = modes
    trigger["authenticationRef"] = {"name": "prom-auth"}
    auths = [trigger_authentication("TriggerAuthentication", "prom-auth", "jobs", auth_spec)] if auth_spec else []
    conversion, _ = run(document, *auths)
    assert any(n.path == path and words in n.message for n in conversion.losses), conversion.notes


def test_basic_auth_is_read_from_its_secret(tmp_path: Path) -> None:
    document = queue_worker()
    trigger = document["spec"]["triggers"][0]
    trigger["metadata"]["authModes"] = "basic"
    trigger["authenticationRef"] = {"name": "prom-auth"}
    auth = trigger_authentication(
        "TriggerAuthentication",
        "prom-auth",
        "jobs",
        {
            "secretTargetRef": [
                {"parameter": "username", "name": "prom-basic", "key": "username"},
                {"parameter": "password", "name": "prom-basic", "key": "password"},
            ]
        },
    )
    conversion, registry = run(document, auth)
    spec_of(conversion, tmp_path)
    assert conversion.losses == []
    assert backends_of(registry, secret_refs=True)["prometheus-monitoring"]["basicAuth"] == {
        "usernameSecret": {"namespace": "jobs", "name": "prom-basic", "key": "username"},
        "passwordSecret": {"namespace": "jobs", "name": "prom-basic", "key": "password"},
    }
    # with --credentials file the password is a mounted file; a username has no file field: a Secret still
    assert backends_of(registry)["prometheus-monitoring"]["basicAuth"] == {
        "usernameSecret": {"namespace": "jobs", "name": "prom-basic", "key": "username"},
        "passwordFile": f"{SECRETS}/jobs/prom-basic/password",
    }
