"""Redirects (``prometheus.followRedirects``) against a scriptable fake Prometheus: none followed by default,
same-origin ones followed when allowed (the form and credentials re-sent, a bounded number of hops), and
never one to another origin; the Location a message names keeps no credential.
"""

from __future__ import annotations

import pytest
from aiohttp import web

from autoscaler.prometheus import PrometheusClient, PrometheusRedirect, PrometheusSettings
from autoscaler.prometheus.redirects import MAX_REDIRECTS, Redirects, shown_location
from autoscaler.prometheus.settings import parse_prometheus_settings
from autoscaler.values.fields import SpecError
from tests.prometheus.fake_server import FakePrometheus, Request, json_response, vector

API_KEY = "api-key-0d9e8f7a"
TOKEN = "access-token-5a4b3c2d"


def settings(url: str, follow: str = "never") -> PrometheusSettings:
    return PrometheusSettings(
        url=url,
        headers={"X-Api-Key": API_KEY},
        query_parameters={"access_token": TOKEN},
        follow_redirects=follow,
        retries=2,
    )


def redirecting(status: int, location: str, *, answer_under: str | None = None) -> object:
    """Redirect every request not under ``answer_under`` to ``location``; answer the others a vector."""

    async def handle(request: Request) -> web.StreamResponse:
        if answer_under is not None and request.path.startswith(answer_under):
            return json_response(vector("7"))
        return web.Response(status=status, headers={"Location": location})

    return handle


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_no_redirect_is_followed_by_default(fake: FakePrometheus, status: int) -> None:
    fake.handler = redirecting(status, "/moved/api/v1/query?access_token=" + TOKEN)  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url)) as client:
        with pytest.raises(PrometheusRedirect) as raised:
            await client.query("up")
        assert client.stats.failures == {"redirect": 1}
    message = str(raised.value)
    assert raised.value.kind == "redirect"
    assert f"HTTP {status}" in message and f"{fake.url}/moved/api/v1/query?…" in message, message
    assert "prometheus.followRedirects" in message and TOKEN not in message
    assert len(fake.requests) == 1, "a refused redirect is final: not retried, not followed"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_same_origin_redirects_resend_the_query_when_allowed(fake: FakePrometheus, status: int) -> None:
    fake.handler = redirecting(status, "/moved/api/v1/query", answer_under="/moved/")  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url, "sameOrigin")) as client:
        result = await client.query("up")
    assert [s.value for s in result.vector] == ["7"]
    first, followed = fake.requests
    assert (first.path, followed.path) == ("/api/v1/query", "/moved/api/v1/query")
    assert followed.form == first.form and followed.form["query"] == "up" and followed.form["access_token"] == TOKEN
    assert followed.headers["X-Api-Key"] == API_KEY


async def test_a_303_is_not_followed_by_a_query(fake: FakePrometheus) -> None:
    fake.handler = redirecting(303, "/moved/api/v1/query", answer_under="/moved/")  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url, "sameOrigin")) as client:
        with pytest.raises(PrometheusRedirect, match="HTTP 303 asks for a GET of another resource"):
            await client.query("up")
    assert len(fake.requests) == 1


async def test_redirects_are_followed_a_bounded_number_of_times(fake: FakePrometheus) -> None:
    fake.handler = redirecting(307, "/api/v1/query")  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url, "sameOrigin")) as client:
        with pytest.raises(PrometheusRedirect, match=f"more than {MAX_REDIRECTS} redirects in a row"):
            await client.query("up")
    assert len(fake.requests) == MAX_REDIRECTS + 1


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.2:{port}/api/v1/query",  # another host
        "http://127.0.0.1:1/api/v1/query",  # another port
        "https://127.0.0.1:{port}/api/v1/query",  # another scheme
        "//127.0.0.2:{port}/api/v1/query",  # another host, scheme-relative
    ],
)
async def test_another_origin_is_refused_even_when_allowed(fake: FakePrometheus, location: str) -> None:
    port = fake.url.rsplit(":", 1)[1]
    fake.handler = redirecting(307, location.format(port=port))  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url, "sameOrigin")) as client:
        with pytest.raises(PrometheusRedirect, match="credentials are never sent to another origin"):
            await client.query("up")
    assert len(fake.requests) == 1


async def test_a_location_with_credentials_is_refused_and_not_shown(fake: FakePrometheus) -> None:
    port = fake.url.rsplit(":", 1)[1]
    fake.handler = redirecting(307, f"http://user:pa55word@127.0.0.1:{port}/x")  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url, "sameOrigin")) as client:
        with pytest.raises(PrometheusRedirect, match="holds credentials of its own") as raised:
            await client.query("up")
    assert "pa55word" not in str(raised.value) and "user" not in str(raised.value)
    assert f"http://127.0.0.1:{port}/x" in str(raised.value)


async def test_ready_follows_same_origin_redirects_only_when_allowed(fake: FakePrometheus) -> None:
    async def handle(request: Request) -> web.StreamResponse:
        if request.path == "/-/ready":
            return web.Response(status=302, headers={"Location": "/prefix/-/ready"})
        return web.Response(text="ready")

    fake.handler = handle  # type: ignore[assignment]
    async with PrometheusClient(settings(fake.url)) as client:
        assert not await client.ready()
    async with PrometheusClient(settings(fake.url, "sameOrigin")) as client:
        assert await client.ready()
    assert [r.path for r in fake.requests] == ["/-/ready", "/-/ready", "/prefix/-/ready"]


def test_the_shown_location_has_no_credentials_and_no_query() -> None:
    assert shown_location("http://u:p@host:9090/a/b?token=x#f") == "http://host:9090/a/b?…"
    assert shown_location("https://[::1]/a") == "https://[::1]/a"
    assert shown_location("http://host:port/") == "(a Location that is not a URL)"
    assert shown_location("http://host/" + "a" * 400).endswith("a…")


def test_origins_compare_scheme_host_and_default_port() -> None:
    policy = Redirects("http://Prometheus.example:80/prefix", "sameOrigin")
    assert policy.next_url("http://prometheus.example/prefix/x", 307, "http://PROMETHEUS.example/y#f", 0, "POST") == (
        "http://PROMETHEUS.example/y"
    )
    with pytest.raises(PrometheusRedirect, match="no Location"):
        policy.next_url("http://prometheus.example/x", 307, None, 0, "POST")


def test_the_setting_is_validated() -> None:
    assert parse_prometheus_settings({"url": "http://p"}).follow_redirects == "never"
    assert parse_prometheus_settings({"url": "http://p", "followRedirects": "sameOrigin"}).follow_redirects == (
        "sameOrigin"
    )
    with pytest.raises(SpecError) as raised:
        parse_prometheus_settings({"url": "http://p", "followRedirects": "always"})
    assert 'prometheus.followRedirects: Unsupported value: "always": supported values: "never", "sameOrigin"' in str(
        raised.value
    )
