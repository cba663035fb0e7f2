"""Named Prometheus backends in the service settings (``prometheus.backends``), a metric's ``backend``, and the
basic-auth password read from a file (issue 36, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.prometheus.auth import Credentials, PrometheusCredentialsError
from autoscaler.prometheus.backends import DEFAULT_BACKEND, all_backends
from autoscaler.prometheus.connection_settings import SecretRef
from autoscaler.prometheus.redaction import KnownSecrets, basic_authorization
from autoscaler.prometheus.settings import BasicAuth, PrometheusSettings
from autoscaler.service.settings import parse_service_settings
from autoscaler.values.fields import SpecError


def errors_of(document: object) -> list[str]:
    with pytest.raises(SpecError) as raised:
        parse_service_settings(document)
    return [str(error) for error in raised.value.errors]


def test_named_backends_stand_alone_beside_the_default_one() -> None:
    settings = parse_service_settings(
        {
            "prometheus": {
                "url": "http://prometheus:9090",
                "timeoutSeconds": 3,
                "headers": {"X-Scope-OrgID": "team-a"},
                "backends": {
                    "tenant-b": {
                        "url": "https://mimir:8080/prometheus/",
                        "headers": {"X-Scope-OrgID": "tenant-b"},
                        "basicAuth": {"username": "autoscaler", "passwordFile": "/etc/b/password"},
                        "tls": {"caFile": "/etc/b/ca.crt", "insecureSkipVerify": True},
                        "queryParameters": {"dedup": "true"},
                    },
                    "thanos": {"url": "http://thanos:10902", "bearerTokenFile": "/etc/t/token", "timeoutSeconds": 9},
                },
            }
        }
    )
    assert settings.prometheus.url == "http://prometheus:9090"
    backends = all_backends(settings.prometheus, settings.prometheus_backends)
    assert list(backends) == [DEFAULT_BACKEND, "tenant-b", "thanos"]
    tenant = backends["tenant-b"]
    assert tenant.url == "https://mimir:8080/prometheus"
    assert tenant.basic_auth == BasicAuth("autoscaler", "", "/etc/b/password")
    assert tenant.headers == {"X-Scope-OrgID": "tenant-b"} and tenant.ca_file == "/etc/b/ca.crt"
    assert tenant.insecure_skip_verify and tenant.query_parameters == {"dedup": "true"}
    # Nothing is inherited from the default backend: its timeout and its tenant header stay its own.
    assert tenant.timeout_seconds == 5.0 and backends["thanos"].timeout_seconds == 9.0
    assert repr(tenant.basic_auth) == "BasicAuth(username='autoscaler', password_file='/etc/b/password')"
    assert parse_service_settings({"prometheus": {"url": "http://p"}}).prometheus_backends == {}


def test_every_problem_of_the_backends_is_reported_with_its_path() -> None:
    problems = errors_of(
        {
            "prometheus": {
                "url": "http://prometheus:9090",
                "backends": {
                    "default": {"url": "http://other:9090"},
                    "Tenant_B": {"url": "http://b:9090"},
                    "nested": {"url": "http://n:9090", "backends": {}},
                    "both": {"url": "http://c", "basicAuth": {"username": "u", "password": "p", "passwordFile": "/f"}},
                    "neither": {"basicAuth": {"username": "u"}},
                    "inline": {"url": "http://user:pw@d:9090"},
                },
            }
        }
    )
    assert problems == [
        'prometheus.backends.default: Forbidden: "default" is the prometheus block itself (prometheus.url)',
        "prometheus.backends.Tenant_B: must be a backend name: a DNS-1123 label (lowercase letters, digits, '-'; "
        "at most 63)",
        "prometheus.backends.nested.backends: unknown field",
        "prometheus.backends.both.basicAuth.passwordFile: Forbidden: set one of password, passwordFile and "
        "passwordSecret",
        "prometheus.backends.neither.url: Required value",
        "prometheus.backends.neither.basicAuth.password: Required value: the password, or passwordFile or "
        "passwordSecret (where it is read)",
        "prometheus.backends.inline.url: Forbidden: credentials in the URL; use basicAuth or bearerTokenFile",
    ]
    assert errors_of({"prometheus": {"url": "http://p", "backends": ["a"]}}) == [
        "prometheus.backends: must be an object, not list"
    ]


def test_a_metric_names_its_backend() -> None:
    external = {
        "metric": {"name": "queue"},
        "target": {"type": "AverageValue", "averageValue": "10"},
        "query": "sum(queue)",
        "backend": "tenant-b",
    }
    spec = parse_target_spec(
        {
            "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
            "maxReplicas": 5,
            "metrics": [
                {"type": "External", "external": external},
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                },
            ],
        },
        "spec",
    )
    assert [metric.backend for metric in spec.metrics] == ["tenant-b", None]
    with pytest.raises(SpecError) as raised:
        parse_target_spec(
            {
                "scaleTargetRef": {"kind": "Deployment", "name": "worker"},
                "maxReplicas": 5,
                "metrics": [{"type": "External", "external": {**external, "backend": "Tenant B"}}],
            },
            "spec",
        )
    assert [str(error) for error in raised.value.errors] == [
        "spec.metrics[0].external.backend: must be a backend name of prometheus.backends (a DNS-1123 label), "
        "not 'Tenant B'"
    ]


async def test_the_basic_auth_password_is_read_from_its_file_and_redacted(tmp_path: Path) -> None:
    password_file = tmp_path / "password"
    password_file.write_text("first-secret\n")
    secrets = KnownSecrets()
    settings = PrometheusSettings(url="http://p", basic_auth=BasicAuth("autoscaler", password_file=str(password_file)))
    credentials = Credentials(settings, secrets)
    assert credentials.refreshable
    assert credentials.headers()["Authorization"] == basic_authorization("autoscaler", "first-secret")
    assert secrets.redact("echo first-secret") == "echo <redacted>"
    password_file.write_text("second-secret\n")
    await credentials.refresh()  # what a 401 does: the file is read again at once
    assert credentials.headers()["Authorization"] == basic_authorization("autoscaler", "second-secret")
    missing = PrometheusSettings(url="http://p", basic_auth=BasicAuth("u", password_file=str(tmp_path / "absent")))
    with pytest.raises(PrometheusCredentialsError, match=r"cannot read the basic auth password file .*absent"):
        Credentials(missing).headers()


def test_credentials_by_secret_reference() -> None:
    settings = parse_service_settings(
        {
            "prometheus": {
                "url": "http://prometheus:9090",
                "bearerTokenSecret": {"namespace": "monitoring", "name": "prom-token", "key": "token"},
                "backends": {
                    "tenant-b": {
                        "url": "http://mimir:8080",
                        "basicAuth": {
                            "username": "autoscaler",
                            "passwordSecret": {"namespace": "tenant-b", "name": "mimir", "key": "password"},
                        },
                    }
                },
            }
        }
    )
    assert settings.prometheus.bearer_token_secret == SecretRef("monitoring", "prom-token", "token")
    assert "SecretRef(namespace='monitoring', name='prom-token', key='token')" in repr(settings.prometheus)
    basic = settings.prometheus_backends["tenant-b"].basic_auth
    assert basic is not None and basic.password_secret == SecretRef("tenant-b", "mimir", "password")
    assert errors_of(
        {
            "prometheus": {
                "url": "http://p",
                "bearerTokenFile": "/t",
                "bearerTokenSecret": {"namespace": "Mon", "name": "x_y", "key": "a/b"},
            }
        }
    ) == [
        "prometheus.bearerTokenSecret.namespace: must be a namespace name (a DNS-1123 label), not 'Mon'",
        "prometheus.bearerTokenSecret.name: must be a Secret's name (a DNS-1123 subdomain), not 'x_y'",
        "prometheus.bearerTokenSecret.key: must be a Secret's key (letters, digits, '-', '_', '.'), not 'a/b'",
        "prometheus.bearerTokenFile: Forbidden: set one of bearerToken, bearerTokenFile and bearerTokenSecret",
    ]
    assert errors_of({"prometheus": {"url": "http://p", "bearerTokenSecret": {"name": "x"}}}) == [
        "prometheus.bearerTokenSecret.namespace: Required value",
        "prometheus.bearerTokenSecret.key: Required value",
    ]


def test_header_values_and_the_basic_auth_username_by_secret_reference() -> None:
    api_key = {"namespace": "monitoring", "name": "prom", "key": "apikey"}
    user = {"namespace": "monitoring", "name": "prom", "key": "user"}
    password = {"namespace": "monitoring", "name": "prom", "key": "password"}
    settings = parse_service_settings(
        {
            "prometheus": {
                "url": "http://prometheus:9090",
                "headerSecrets": {"X-Api-Key": api_key},
                "basicAuth": {"usernameSecret": user, "passwordSecret": password},
            }
        }
    )
    assert settings.prometheus.header_secrets == {"X-Api-Key": SecretRef("monitoring", "prom", "apikey")}
    basic = settings.prometheus.basic_auth
    assert basic is not None and basic.username_secret == SecretRef("monitoring", "prom", "user") and not basic.static
    assert errors_of(
        {
            "prometheus": {
                "url": "http://p",
                "headers": {"X-Api-Key": "inline"},
                "headerSecrets": {"x-api-key": api_key, "Authorization": api_key, "bad header": api_key},
                "bearerTokenFile": "/token",
            }
        }
    ) == [
        "prometheus.headerSecrets.bad header: must be a valid HTTP header name",
        "prometheus.headers: Forbidden: an Authorization header conflicts with bearerToken/basicAuth",
        "prometheus.headerSecrets.x-api-key: Forbidden: the header is in headers too",
    ]
    assert errors_of(
        {"prometheus": {"url": "http://p", "basicAuth": {"username": "u", "usernameSecret": user, "password": "p"}}}
    ) == ["prometheus.basicAuth.usernameSecret: Forbidden: set either username or usernameSecret, not both"]
