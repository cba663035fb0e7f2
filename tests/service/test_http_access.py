"""Who may reach the HTTP server and who is answered: ``http.address`` (and ``--http-address``,
``AUTOSCALER_HTTP_ADDRESS``) binds where told, and with ``http.tokenFile`` everything but the probes asks
for the token (401 without it, 200 with it), a rotated file's new token taken at once."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from autoscaler.cli import build_parser
from autoscaler.cli.run import flag_overrides
from autoscaler.service.http import HttpServer, StatusMap
from autoscaler.service.http_auth import TokenFileError
from autoscaler.service.settings import HttpSettings, load_service_settings, parse_service_settings
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.values.fields import SpecError

TOKEN = "api-token-6f0c2b9e"
STATUS = {"conditions": [{"type": "ScalingActive", "status": "True"}]}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        yield client


def server(address: str = "127.0.0.1", token_file: Path | None = None) -> HttpServer:
    return HttpServer(
        HttpSettings(address, 0, str(token_file) if token_file is not None else None),
        ServiceMetrics(process_metrics=False),
        targets=StatusMap({("default", "web"): STATUS}),
    )


async def status_of(session: aiohttp.ClientSession, url: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with session.get(url, headers=headers) as response:
        await response.read()
        return response.status


async def test_loopback_is_not_reachable_from_another_address(session: aiohttp.ClientSession) -> None:
    """Bound to 127.0.0.1, the port is closed on 127.0.0.2 (another address of the host); bound to
    0.0.0.0 (the default), it answers there too."""
    loopback = server("127.0.0.1")
    await loopback.start()
    try:
        assert await status_of(session, f"http://127.0.0.1:{loopback.port}/healthz") == 200
        with pytest.raises(aiohttp.ClientConnectorError):
            await status_of(session, f"http://127.0.0.2:{loopback.port}/healthz")
    finally:
        await loopback.stop()
    everywhere = server("0.0.0.0")
    await everywhere.start()
    try:
        assert await status_of(session, f"http://127.0.0.2:{everywhere.port}/healthz") == 200
    finally:
        await everywhere.stop()


async def test_with_a_token_only_the_probes_answer_without_it(session: aiohttp.ClientSession, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    running = server(token_file=token_file)
    await running.start()
    base = f"http://127.0.0.1:{running.port}"
    try:
        for path in ("/api/targets", "/api/targets/default/web", "/metrics"):
            assert await status_of(session, base + path) == 401, path
            assert await status_of(session, base + path, "wrong-token") == 401, path
            assert await status_of(session, base + path, TOKEN) == 200, path
        for path in ("/healthz", "/readyz"):
            assert await status_of(session, base + path) == 200, path
        async with session.get(base + "/api/targets", headers={"Authorization": f"Basic {TOKEN}"}) as response:
            assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
            assert "http.tokenFile" in (await response.json())["error"]

        # A rotated Secret: the new token is taken within a second or so, the old one refused from then on.
        rotated = tmp_path / "token.new"
        rotated.write_text("rotated-token-1d3a")
        os.replace(rotated, token_file)
        deadline = asyncio.get_running_loop().time() + 10
        while await status_of(session, base + "/api/targets", "rotated-token-1d3a") != 200:
            assert asyncio.get_running_loop().time() < deadline, "the rotated token was never accepted"
            await asyncio.sleep(0.2)
        assert await status_of(session, base + "/api/targets", TOKEN) == 401
    finally:
        await running.stop()


async def test_a_token_file_that_cannot_be_read_stops_the_start(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    unprotected = server(token_file=missing)
    with pytest.raises(TokenFileError, match=f"http.tokenFile: cannot read the bearer token file {missing}"):
        await unprotected.start()
    with pytest.raises(RuntimeError, match="not started"):
        unprotected.port  # noqa: B018 - nothing listens


def test_the_address_and_token_settings(tmp_path: Path) -> None:
    base = {"prometheus": {"url": "http://p"}}
    settings = parse_service_settings({**base, "http": {"address": "::1", "tokenFile": "/etc/token"}})
    assert settings.telemetry.http == HttpSettings("::1", 8080, "/etc/token")
    assert parse_service_settings(base).telemetry.http == HttpSettings("0.0.0.0", 8080, None)
    with pytest.raises(SpecError) as raised:
        parse_service_settings({**base, "http": {"address": "127.0.0.1:8080", "tokenFile": ""}})
    assert str(raised.value).count("http.") == 2
    assert "http.address: must be an IP address (0.0.0.0, 127.0.0.1, ::, ::1) or a host name" in str(raised.value)
    assert "http.tokenFile: Required value" in str(raised.value)

    environment = load_service_settings(
        None, environ={"AUTOSCALER_PROMETHEUS_URL": "http://p", "AUTOSCALER_HTTP_ADDRESS": "127.0.0.1"}
    )
    assert environment.telemetry.http.address == "127.0.0.1"
    args = build_parser().parse_args(["run", "--http-address", "127.0.0.1", "--http-port", "9090"])
    assert flag_overrides(args) == {("http", "address"): "127.0.0.1", ("http", "port"): 9090}
