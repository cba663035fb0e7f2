"""The API server's proxy comes from the environment once, at start-up, as client-go's
``ProxyFromEnvironment`` takes it: requests go through ``HTTP_PROXY`` (with its credentials) unless
``NO_PROXY`` covers the server, and the session does not read the environment (nor ``~/.netrc``) again on
each request (two worker-thread hops per request otherwise)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from autoscaler.kube.api import KubeApi, KubeError
from autoscaler.kube.client import make_api_client
from tests.kube.test_token_file import kubeconfig

ANSWER = b'{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"through-the-proxy"}}'


class RecordingProxy:
    """A loopback HTTP proxy that answers every request itself and keeps its request head."""

    def __init__(self) -> None:
        self.heads: list[str] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                self.heads.append(head)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(ANSWER)}\r\n\r\n".encode()
                    + ANSWER
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[RecordingProxy]:
    recorder = RecordingProxy()
    server = await asyncio.start_server(recorder.handle, "127.0.0.1", 0)
    recorder.port = server.sockets[0].getsockname()[1]
    async with server:
        yield recorder


def server_kubeconfig(tmp_path: Path) -> str:
    return str(kubeconfig(tmp_path, {"token": "t"}))  # the API server: http://127.0.0.1:1, nothing listens


def proxied_kubeconfig(tmp_path: Path, port: int) -> Path:
    path = Path(server_kubeconfig(tmp_path))
    text = path.read_text().replace(
        "server: http://127.0.0.1:1", f"server: http://127.0.0.1:1\n    proxy-url: http://127.0.0.1:{port}"
    )
    path.write_text(text)
    return path


async def test_requests_go_through_the_environments_proxy_read_once(
    tmp_path: Path, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://ops:s3cret@127.0.0.1:{proxy.port}")
    async with await make_api_client(server_kubeconfig(tmp_path)) as client:
        assert client.rest_client.pool_manager.trust_env is False
        monkeypatch.delenv("HTTP_PROXY")  # read at start-up: a later change is not looked at per request
        answer = await KubeApi(client).get("/api/v1/namespaces/default")
    assert answer["metadata"]["name"] == "through-the-proxy"
    [head] = proxy.heads
    assert head.startswith("GET http://127.0.0.1:1/api/v1/namespaces/default HTTP/1.1\r\n")
    assert f"Proxy-Authorization: Basic {base64.b64encode(b'ops:s3cret').decode()}\r\n" in head
    assert "\r\nauthorization: Bearer t\r\n" in head  # the API server's own credentials, as sent before


async def test_no_proxy_for_a_server_that_no_proxy_covers(
    tmp_path: Path, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    async with await make_api_client(server_kubeconfig(tmp_path)) as client:
        with pytest.raises(KubeError, match=r"Cannot connect to host 127\.0\.0\.1:1"):
            await KubeApi(client, timeout=5).get("/api/v1/namespaces/default")
    assert proxy.heads == []


async def test_a_kubeconfig_proxy_url_wins_over_the_environment(
    tmp_path: Path, proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")  # would be refused
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    path = proxied_kubeconfig(tmp_path, proxy.port)
    async with await make_api_client(str(path)) as client:
        answer = await KubeApi(client).get("/api/v1/namespaces/default")
    assert answer["metadata"]["name"] == "through-the-proxy"
    assert len(proxy.heads) == 1
