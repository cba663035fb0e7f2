"""The client's credentials and TLS against a scriptable fake Prometheus: bearer tokens (a rotated file
picked up, never shown in a message), basic auth, a token file it cannot read, a CA file, a client
certificate, and TLS files it cannot load.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from aiohttp import web

from autoscaler.core.observation import MetricFailure
from autoscaler.prometheus import (
    MetricsReader,
    PrometheusClient,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusSettings,
    PrometheusUnreachable,
)
from autoscaler.prometheus.auth import PrometheusCredentialsError
from autoscaler.prometheus.settings import BasicAuth
from tests.guard import REQUIRE_SERVERS
from tests.prometheus import scenario as sc
from tests.prometheus.fake_server import FakePrometheus, Request, json_response, vector


def settings_for(url: str, **overrides: object) -> PrometheusSettings:
    return PrometheusSettings(url=url, **overrides)  # type: ignore[arg-type]


def _bearer_checker(expected: list[str]) -> object:
    async def handle(request: Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {expected[0]}":
            # Some proxies echo the credentials they refused: they must not reach our messages.
            return web.Response(text=f"bad credentials {request.headers.get('Authorization')}", status=401)
        return json_response(vector("1"))

    return handle


async def test_token_file_rotation_is_picked_up(fake: FakePrometheus, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    expected = ["first-token"]
    fake.handler = _bearer_checker(expected)  # type: ignore[assignment]
    async with PrometheusClient(settings_for(fake.url, bearer_token_file=str(token_file))) as client:
        await client.query("x", 1.0)
        # Rotation seen by the periodic check (at most once a second)…
        token_file.write_text("second-token\n")
        expected[0] = "second-token"
        await asyncio.sleep(1.05)
        await client.query("x", 1.0)
        assert fake.requests[-1].headers["Authorization"] == "Bearer second-token"
        assert client.stats.http_requests == 2
        # …or at once when Prometheus answers 401 with the old one.
        token_file.write_text("third-token")
        expected[0] = "third-token"
        await client.query("x", 1.0)
        assert [r.headers["Authorization"] for r in fake.requests[-2:]] == ["Bearer second-token", "Bearer third-token"]


async def test_secrets_never_reach_messages_or_reprs(fake: FakePrometheus, tmp_path: Path) -> None:
    fake.handler = _bearer_checker(["something-else"])  # type: ignore[assignment]
    settings = settings_for(fake.url, bearer_token="s3cr3t-token-value", headers={"X-Api-Key": "k3y-value"})
    async with PrometheusClient(settings) as client:
        with pytest.raises(PrometheusHTTPError) as raised:
            await client.query("x", 1.0)
    assert raised.value.status == 401 and "check the credentials" in str(raised.value)
    assert "s3cr3t" not in str(raised.value) and "<redacted>" in str(raised.value)
    basic = settings_for(fake.url, basic_auth=BasicAuth("me", "pa55word"))
    for shown in (repr(settings), str(settings), repr(basic)):
        assert "s3cr3t" not in shown and "k3y-value" not in shown and "pa55word" not in shown


async def test_basic_auth_header(fake: FakePrometheus) -> None:
    async with PrometheusClient(settings_for(fake.url, basic_auth=BasicAuth("me", "pa55word"))) as client:
        await client.query("x", 1.0)
    assert fake.requests[0].headers["Authorization"] == "Basic bWU6cGE1NXdvcmQ="


async def test_missing_token_file_fails_the_metric(fake: FakePrometheus, tmp_path: Path) -> None:
    async with PrometheusClient(settings_for(fake.url, bearer_token_file=str(tmp_path / "absent"))) as client:
        with pytest.raises(PrometheusCredentialsError, match="cannot read the bearer token file"):
            await client.query("x", 1.0)
        rows = await MetricsReader(client, client.settings).read([sc.web([sc.external_metric("x")])], 1.0)
    assert isinstance(rows[0][0], MetricFailure) and "No such file" in rows[0][0].message
    assert not fake.requests


# -- TLS ----------------------------------------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (openssl, EC keys)."""
    if shutil.which("openssl") is None:
        if REQUIRE_SERVERS:
            pytest.fail("openssl is not installed and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping the TLS tests")
        pytest.skip("openssl is not installed")
    return make_pki(tmp_path_factory.mktemp("pki"))


def make_pki(directory: Path) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate in ``directory`` (openssl, EC keys)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=test-ca", cwd=directory
    )
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name in ("server", "client"):
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            cwd=directory,
        )
    return directory


async def _tls_server(pki: Path, *, require_client_cert: bool) -> FakePrometheus:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    if require_client_cert:
        context.load_verify_locations(pki / "ca.crt")
        context.verify_mode = ssl.CERT_REQUIRED
    return await FakePrometheus().start(ssl_context=context)


async def test_tls_with_ca_file_and_insecure_skip_verify(pki: Path) -> None:
    server = await _tls_server(pki, require_client_cert=False)
    try:
        async with PrometheusClient(settings_for(server.url, ca_file=str(pki / "ca.crt"))) as client:
            assert (await client.query("x", 1.0)).vector[0].value == "1"
        async with PrometheusClient(settings_for(server.url)) as client:
            with pytest.raises(PrometheusUnreachable, match=r"TLS handshake .* failed"):
                await client.query("x", 1.0)
            assert client.stats.http_requests == 1  # not retried: it would fail the same way
        async with PrometheusClient(settings_for(server.url, insecure_skip_verify=True)) as client:
            assert (await client.query("x", 1.0)).vector[0].value == "1"
    finally:
        await server.close()


async def test_tls_client_certificate(pki: Path) -> None:
    server = await _tls_server(pki, require_client_cert=True)
    try:
        with_cert = settings_for(
            server.url, ca_file=str(pki / "ca.crt"), cert_file=str(pki / "client.crt"), key_file=str(pki / "client.key")
        )
        async with PrometheusClient(with_cert) as client:
            assert (await client.query("x", 1.0)).vector[0].value == "1"
        async with PrometheusClient(settings_for(server.url, ca_file=str(pki / "ca.crt"), retries=0)) as client:
            with pytest.raises(PrometheusError):
                await client.query("x", 1.0)
    finally:
        await server.close()


async def test_unreadable_tls_files_fail_at_start(tmp_path: Path) -> None:
    client = PrometheusClient(settings_for("https://127.0.0.1:1", ca_file=str(tmp_path / "missing.crt")))
    with pytest.raises(PrometheusCredentialsError, match="cannot load the TLS files"):
        await client.start()
