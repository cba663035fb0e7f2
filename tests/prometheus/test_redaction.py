"""The one redaction (:class:`KnownSecrets`): every secret value the settings hold, and the client's texts
redacted with it whatever the backend echoes, before anything is cut short."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web

from autoscaler.prometheus import PrometheusBadQuery, PrometheusClient, PrometheusError, PrometheusSettings
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.prometheus.settings import BasicAuth
from tests.prometheus.fake_server import FakePrometheus, Request, error_response


def test_every_configured_secret_is_known() -> None:
    secrets = KnownSecrets(
        [
            PrometheusSettings(
                url="http://a",
                basic_auth=BasicAuth("me", "pa55word"),
                headers={"X-Api-Key": "header-value", "X-Short": "abc"},
                query_parameters={"access_token": "a+b/c=d", "dedup": "true", "flag": "FALSE"},
            ),
            PrometheusSettings(url="http://b", bearer_token="bearer-value"),
        ]
    )
    text = (
        "pa55word Basic bWU6cGE1NXdvcmQ= / bWU6cGE1NXdvcmQ= header-value abc "
        "a+b/c=d a%2Bb%2Fc%3Dd true FALSE bearer-value"
    )
    assert secrets.redact(text) == (
        "<redacted> <redacted> / <redacted> <redacted> abc <redacted> <redacted> true FALSE <redacted>"
    )


def test_a_longer_secret_is_replaced_whole() -> None:
    secrets = KnownSecrets()
    secrets.add("token")
    secrets.add("token-with-more")
    assert secrets.redact("token-with-more and token") == "<redacted> and <redacted>"


def test_documents_are_redacted_but_for_the_keys_kept() -> None:
    secrets = KnownSecrets([PrometheusSettings(url="http://a", headers={"X-Scope-OrgID": "team-a"})])
    document = {
        "conditions": [{"message": "tenant team-a failed", "status": "False"}],
        "currentMetrics": [{"external": {"metric": {"selector": {"matchLabels": {"tenant": "team-a"}}}}}],
        "team-a": 3,
        "lastDecision": {"explanation": ("team-a",), "replicas": 2, "scaled": False},
    }
    assert secrets.redact_document(document, keep=frozenset({"currentMetrics"})) == {
        "conditions": [{"message": "tenant <redacted> failed", "status": "False"}],
        "currentMetrics": document["currentMetrics"],
        "team-a": 3,
        "lastDecision": {"explanation": ["<redacted>"], "replicas": 2, "scaled": False},
    }
    assert KnownSecrets().redact_document(document) is document


async def test_an_echoed_query_parameter_is_redacted(fake: FakePrometheus, tmp_path: Path) -> None:
    """A 400 echoing the form: its query parameter and the token file's token are redacted."""
    token = tmp_path / "token"
    token.write_text("file-token-value\n")

    async def echo(request: Request) -> web.StreamResponse:
        values = " ".join([*request.form.values(), request.headers.get("Authorization", "")])
        return error_response(400, "bad_data", f"cannot parse {values}")

    fake.handler = echo  # type: ignore[assignment]
    settings = PrometheusSettings(
        url=fake.url, bearer_token_file=str(token), query_parameters={"access_token": "query-parameter-value"}
    )
    async with PrometheusClient(settings) as client:
        with pytest.raises(PrometheusBadQuery) as raised:
            await client.query("up")
        message = str(raised.value)
        assert "query-parameter-value" not in message and "file-token-value" not in message
        assert message.count("<redacted>") == 2, message
        assert client.secrets.redact("file-token-value") == "<redacted>", "the file's token is known to every sink"


@pytest.mark.parametrize("json_error", [True, False], ids=["error-text", "page-snippet"])
async def test_a_secret_across_the_cut_is_not_left_in_part(fake: FakePrometheus, json_error: bool) -> None:
    """A secret that straddles where a long error text (500 characters) or a page's snippet (200) is cut:
    redacted before the cut, not a part of it left."""
    secret = "straddling-secret-value-0123456789"
    limit = 500 if json_error else 200
    text = "x" * (limit - 10) + secret + " and more"

    async def echo(request: Request) -> web.StreamResponse:
        if json_error:
            return error_response(400, "bad_data", text)
        return web.Response(status=502, text=text, content_type="text/html")

    fake.handler = echo  # type: ignore[assignment]
    settings = PrometheusSettings(url=fake.url, headers={"X-Api-Key": secret}, retries=0)
    async with PrometheusClient(settings) as client:
        with pytest.raises(PrometheusError) as raised:
            await client.query("up")
    assert "straddling" not in str(raised.value) and "<redac" in str(raised.value), str(raised.value)
