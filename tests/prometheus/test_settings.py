"""Parsing Prometheus settings: every problem reported with its path, secrets never shown."""

from __future__ import annotations

import pytest

from autoscaler.prometheus.settings import BasicAuth, PrometheusSettings, parse_prometheus_settings
from autoscaler.values.fields import SpecError


def errors_of(data: object) -> list[str]:
    with pytest.raises(SpecError) as raised:
        parse_prometheus_settings(data)
    return [str(e) for e in raised.value.errors]


def test_defaults() -> None:
    settings = parse_prometheus_settings({"url": "http://prometheus:9090/"})
    assert settings == PrometheusSettings(url="http://prometheus:9090")
    assert (settings.timeout_seconds, settings.concurrency, settings.retries) == (5.0, 20, 2)
    assert (settings.pod_label, settings.container_label, settings.namespace_label) == ("pod", "container", "namespace")
    assert settings.cpu_rate_window == 120.0
    assert settings.compression is False


def test_partial_answers_are_denied_unless_told_otherwise() -> None:
    assert parse_prometheus_settings({"url": "http://p"}).request_parameters == {
        "partial_response": "false",
        "deny_partial_response": "1",
    }
    allowed = parse_prometheus_settings(
        {"url": "http://p", "denyPartialResponse": False, "queryParameters": {"dedup": "true"}}
    )
    assert allowed.request_parameters == {"dedup": "true"}
    own = parse_prometheus_settings({"url": "http://p", "queryParameters": {"partial_response": "true"}})
    assert own.request_parameters == {"partial_response": "true", "deny_partial_response": "1"}
    assert errors_of({"url": "http://p", "denyPartialResponse": "no"}) == [
        "prometheus.denyPartialResponse: must be true or false, not string"
    ]


def test_everything() -> None:
    settings = parse_prometheus_settings(
        {
            "url": "https://thanos.example:10902/prefix",
            "basicAuth": {"username": "me", "password": "pw"},
            "headers": {"X-Scope-OrgID": "team-a"},
            "queryParameters": {"dedup": "true", "partial_response": "false"},
            "tls": {"caFile": "/ca", "certFile": "/crt", "keyFile": "/key", "insecureSkipVerify": True},
            "timeoutSeconds": 2.5,
            "concurrency": 8,
            "retries": 0,
            "podLabel": "kpod",
            "containerLabel": "ctr",
            "namespaceLabel": "ns",
            "cpuRateWindow": "1m30s",
            "queries": {"cpu": "sum by (ns, kpod, ctr) (rate(x{<<scope>>}[<<window>>]))", "memory": "y{<<scope>>}"},
            "maxQueryLength": 4096,
            "compression": True,
        }
    )
    assert settings.basic_auth == BasicAuth("me", "pw")
    assert settings.headers == {"X-Scope-OrgID": "team-a"}
    assert settings.query_parameters == {"dedup": "true", "partial_response": "false"}
    assert (settings.ca_file, settings.cert_file, settings.key_file, settings.insecure_skip_verify) == (
        "/ca",
        "/crt",
        "/key",
        True,
    )
    assert (settings.timeout_seconds, settings.concurrency, settings.retries) == (2.5, 8, 0)
    assert settings.cpu_rate_window == 90.0 and settings.cpu_rate_window_text == "90s"
    assert settings.memory_query == "y{<<scope>>}" and settings.max_query_length == 4096
    assert settings.compression is True
    assert parse_prometheus_settings({"url": "http://p", "cpuRateWindow": 45}).cpu_rate_window == 45.0


def test_every_problem_is_reported_with_its_path() -> None:
    assert errors_of(
        {
            "url": "ftp://x",
            "bearerToken": "t0ken-value",
            "bearerTokenFile": "/f",
            "headers": {"Bad Header": "v", "X-Ok": 3},
            "tls": {"certFile": "/crt"},
            "timeoutSeconds": 0,
            "concurrency": 0,
            "retries": -1,
            "podLabel": "k8s.pod",
            "cpuRateWindow": "2 minutes",
            "queries": {"cpu": "x{<<scoop>>}", "gpu": "z"},
            "queryParameters": {"time": "1"},
            "timeout": 3,
        }
    ) == [
        "prometheus.url: must be an http:// or https:// URL with a host, not 'ftp://x'",
        "prometheus.bearerTokenFile: Forbidden: set one of bearerToken, bearerTokenFile and bearerTokenSecret",
        "prometheus.headers.Bad Header: must be a valid HTTP header name",
        "prometheus.headers.X-Ok: must be a string, not integer",
        "prometheus.queryParameters.time: Forbidden: set by the client for every query",
        "prometheus.tls.keyFile: Required value: a client certificate needs both certFile and keyFile",
        "prometheus.timeoutSeconds: must be between 0.001 and 300",
        "prometheus.concurrency: must be between 1 and 1000",
        "prometheus.retries: must be between 0 and 10",
        "prometheus.podLabel: must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), not 'k8s.pod'",
        'prometheus.cpuRateWindow: must be a duration such as "2m" or "90s", or a number of seconds, not \'2 minutes\'',
        "prometheus.queries.cpu: unknown placeholder <<scoop>> (did you mean <<scope>>?) (placeholders: scope, "
        "namespace, name, target_kind, target_name, selector, pods, window, container, resource, metric, "
        "pod_label, namespace_label, container_label)",
        'prometheus.queries.gpu: unknown field (did you mean "cpu"?)',
        'prometheus.timeout: unknown field (did you mean "timeoutSeconds"?)',
    ]


def test_secrets_stay_out_of_errors_and_repr() -> None:
    problems = errors_of(
        {
            "url": "https://user:hunter2@prom:9090",
            "bearerToken": "abc-secret",
            "basicAuth": {"username": "u", "password": "pw-secret"},
            "headers": {"X-Key": "line\nbreak-secret", "Authorization": "Bearer zzz-secret"},
        }
    )
    text = "\n".join(problems)
    assert "hunter2" not in text and "secret" not in text
    assert "prometheus.url: Forbidden: credentials in the URL; use basicAuth or bearerTokenFile" in problems
    assert (
        "prometheus.basicAuth: Forbidden: basic auth and a bearer token both set the Authorization header" in problems
    )
    settings = parse_prometheus_settings(
        {"url": "http://p", "bearerToken": "abc-secret", "headers": {"X-Key": "key-secret"}}
    )
    assert "secret" not in repr(settings) and "X-Key" in repr(settings)


def test_required_url_and_types() -> None:
    assert errors_of({}) == ["prometheus.url: Required value"]
    assert errors_of("http://p") == ["prometheus: must be an object, not string"]
    assert errors_of({"url": "http://p", "basicAuth": {"username": "u"}}) == [
        "prometheus.basicAuth.password: Required value: the password, or passwordFile or passwordSecret "
        "(where it is read)"
    ]
