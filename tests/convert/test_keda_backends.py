"""KEDA prometheus triggers' connections converted: serverAddress, namespace, customHeaders, queryParameters,
unsafeSsl, timeout and the (Cluster)TriggerAuthentication an authenticationRef names, as named backends whose
credentials are the files Secret keys are mounted at (references, never values). Each backends fragment passes
the service's settings parser; what cannot be a file is reported per trigger."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest

from autoscaler.convert.keda_auth import readable_references
from autoscaler.convert.keda_backends import DEFAULT_MOUNT_DIR, BackendRegistry
from autoscaler.convert.model import Conversion
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
            "custom",  # the Secret holding the header's name is not in the input: the converter cannot know it
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
            "basic: the username is ConfigMap jobs/c key 'user', which is not in the input files: the settings "
            "read a username from a Secret",
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


# Credentials the tests below put in Secrets: none may appear in a fragment, a target, a note or an output.
HEADER_VALUE = "k3y-VALUE-never-written"
PASSWORD = "pa55-VALUE-never-written"


def secret(name: str, values: dict[str, str], *, string_data: bool = False) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}
    field = {"stringData": values} if string_data else {"data": encoded}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "jobs"}, **field}


def configmap(name: str, values: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "jobs"}, "data": values}


def custom_auth(header_kind: str, value_kind: str) -> dict[str, Any]:
    refs: dict[str, list[dict[str, str]]] = {}
    for parameter, kind, name, key in (
        ("customAuthHeader", header_kind, "names", "header"),
        ("customAuthValue", value_kind, "values", "value"),
    ):
        refs.setdefault(f"{'secret' if kind == 'Secret' else 'configMap'}TargetRef", []).append(
            {"parameter": parameter, "name": name, "key": key}
        )
    return trigger_authentication("TriggerAuthentication", "prom-auth", "jobs", refs)


def worker_with(modes: str, **metadata: str) -> dict[str, Any]:
    document = queue_worker()
    trigger = document["spec"]["triggers"][0]
    trigger["metadata"].update(authModes=modes, **metadata)
    trigger["authenticationRef"] = {"name": "prom-auth"}
    return document


def assert_no_credential(conversion: Conversion, registry: BackendRegistry) -> None:
    shown = " ".join(
        [
            repr(registry.fragment(DEFAULT_MOUNT_DIR, True)),
            repr(registry.fragment(DEFAULT_MOUNT_DIR, False)),
            repr(conversion.target),
            *(str(n) for n in conversion.notes),
        ]
    )
    assert HEADER_VALUE not in shown and PASSWORD not in shown


@pytest.mark.parametrize(
    "names",
    [
        secret("names", {"header": "X-Api-Key", "other": HEADER_VALUE}),
        secret("names", {"header": "X-Api-Key"}, string_data=True),
        configmap("names", {"header": "X-Api-Key"}),
    ],
    ids=["secret-data", "secret-stringData", "configmap"],
)
def test_custom_auth_header_name_is_read_and_its_value_stays_a_secret_reference(
    names: dict[str, Any], tmp_path: Path
) -> None:
    document = worker_with("custom", customHeaders="x-api-key=replaced-by-the-custom-header,X-Source=keda")
    auth = custom_auth(names["kind"], "Secret")
    conversion, registry = run(document, auth, names, secret("values", {"value": HEADER_VALUE}))
    spec_of(conversion, tmp_path)
    assert conversion.losses == []
    value_ref = {"namespace": "jobs", "name": "values", "key": "value"}
    for secret_refs in (True, False):  # the value is read through the API whatever --credentials says
        backend = backends_of(registry, secret_refs=secret_refs)["prometheus-monitoring"]
        # KEDA sets the custom header after customHeaders: the header of the same name is replaced
        assert backend["headers"] == {"X-Source": "keda"}
        assert backend["headerSecrets"] == {"X-Api-Key": value_ref}
        assert [str(ref) for ref in registry.secret_reads(secret_refs)] == ["Secret jobs/values key 'value'"]
    assert_no_credential(conversion, registry)


def test_custom_auth_value_from_a_configmap_is_a_plain_header(tmp_path: Path) -> None:
    document = worker_with("custom")
    auth = custom_auth("ConfigMap", "ConfigMap")
    conversion, registry = run(
        document, auth, configmap("names", {"header": "X-Scope-OrgID"}), configmap("values", {"value": "team-a"})
    )
    spec_of(conversion, tmp_path)
    assert conversion.losses == []
    backend = backends_of(registry)["prometheus-monitoring"]
    assert backend["headers"] == {"X-Scope-OrgID": "team-a"} and "headerSecrets" not in backend


@pytest.mark.parametrize(
    ("given", "unread"),
    [
        ([], "Secret jobs/names key 'header' is not in the input files"),
        ([secret("names", {"other": "X-Api-Key"})], "Secret jobs/names key 'header' is not in"),  # not that key
        ([configmap("names", {"header": "X-Api-Key"})], "Secret jobs/names key 'header' is not in"),  # wrong kind
    ],
)
def test_custom_auth_header_name_unavailable_is_still_a_loss(given: list[dict[str, Any]], unread: str) -> None:
    conversion, registry = run(worker_with("custom"), custom_auth("Secret", "Secret"), *given)
    assert [n.path for n in conversion.losses] == ["spec.triggers[0].metadata.authModes"]
    message = conversion.losses[0].message
    assert unread in message
    assert "add headerSecrets: {<that name>: {namespace: jobs, name: values, key: value}}" in message
    assert "headerSecrets" not in backends_of(registry)["prometheus-monitoring"]


def test_custom_auth_value_in_an_unavailable_configmap_is_a_loss() -> None:
    given = configmap("names", {"header": "X-Scope-OrgID"})
    conversion, _ = run(worker_with("custom"), custom_auth("ConfigMap", "ConfigMap"), given)
    assert [n.path for n in conversion.losses] == ["spec.triggers[0].metadata.authModes"]
    assert (
        "add headers: {<that name>: <the value of ConfigMap jobs/values key 'value'>}" in conversion.losses[0].message
    )


def test_custom_auth_header_name_that_is_no_header_name_is_a_loss() -> None:
    conversion, _ = run(
        worker_with("custom"), custom_auth("ConfigMap", "Secret"), configmap("names", {"header": "a b"})
    )
    assert any("is not a valid HTTP header name" in n.message for n in conversion.losses), conversion.notes


def test_custom_auth_beside_bearer_is_not_sent_by_keda(tmp_path: Path) -> None:
    auth = custom_auth("ConfigMap", "Secret")
    auth["spec"]["secretTargetRef"].append({"parameter": "bearerToken", "name": "token", "key": "token"})
    conversion, registry = run(worker_with("bearer,custom"), auth, configmap("names", {"header": "X-Api-Key"}))
    spec_of(conversion, tmp_path)
    assert conversion.losses == []
    assert "headerSecrets" not in backends_of(registry, secret_refs=True)["prometheus-monitoring"]


def test_basic_auth_username_from_a_configmap_is_written_plainly(tmp_path: Path) -> None:
    auth = trigger_authentication(
        "TriggerAuthentication",
        "prom-auth",
        "jobs",
        {
            "configMapTargetRef": [{"parameter": "username", "name": "prom-user", "key": "user"}],
            "secretTargetRef": [{"parameter": "password", "name": "prom-basic", "key": "password"}],
        },
    )
    given = (configmap("prom-user", {"user": "scraper"}), secret("prom-basic", {"password": PASSWORD}))
    conversion, registry = run(worker_with("basic"), auth, *given)
    spec_of(conversion, tmp_path)
    assert conversion.losses == []
    password_ref = {"namespace": "jobs", "name": "prom-basic", "key": "password"}
    assert backends_of(registry, secret_refs=True)["prometheus-monitoring"]["basicAuth"] == {
        "username": "scraper",
        "passwordSecret": password_ref,
    }
    assert backends_of(registry)["prometheus-monitoring"]["basicAuth"] == {
        "username": "scraper",
        "passwordFile": f"{SECRETS}/jobs/prom-basic/password",
    }
    assert_no_credential(conversion, registry)


def test_only_the_keys_that_are_no_credential_are_read_from_the_cluster() -> None:
    """What ``--from-cluster`` fetches: the one key of each object a READABLE parameter names."""
    auth = custom_auth("Secret", "Secret")
    auth["spec"]["configMapTargetRef"] = [{"parameter": "username", "name": "prom-user", "key": "user"}]
    auth["spec"]["secretTargetRef"].append({"parameter": "password", "name": "prom-basic", "key": "password"})
    assert [str(ref) for ref in readable_references(auth, "keda")] == [
        "ConfigMap jobs/prom-user key 'user'",
        "Secret jobs/names key 'header'",
    ]
    auth["kind"] = "ClusterTriggerAuthentication"
    assert str(readable_references(auth, "keda-system")[1]) == "Secret keda-system/names key 'header'"
