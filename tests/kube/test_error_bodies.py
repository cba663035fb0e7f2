"""Error answers from the API server are read in part: at most 64 KiB of the body, the connection dropped
when more follows, and the error's message cut to 1 KiB with a note of what was left out. Successes are
read whole. Both reading paths: :class:`KubeApi`'s own, and the generated API classes' (the Lease's),
through the session :func:`make_api_client` builds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.client import CoordinationV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from autoscaler.kube.api import MESSAGE_LIMIT, KubeApi, KubeError
from autoscaler.kube.bodies import ERROR_BODY_LIMIT
from autoscaler.kube.client import make_api_client

HUGE = 5_000_000


def status(message: str, code: int = 500) -> bytes:
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": "InternalError",
            "code": code,
        }
    )


async def huge_status(request: web.Request) -> web.Response:
    return web.Response(body=status("x" * HUGE), status=500, content_type="application/json")


async def chunked_text(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=502, headers={"Content-Type": "text/html"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    try:
        await response.write(b"<html><body>Bad gateway</body></html>")
        for _ in range(HUGE // 65536):
            await response.write(b"y" * 65536)
        await response.write_eof()
    except (ConnectionError, RuntimeError):
        pass  # the client stopped reading: what it should do
    return response


async def long_status(request: web.Request) -> web.Response:
    return web.Response(body=status("z" * 5000, 409), status=409, content_type="application/json")


async def big_success(request: web.Request) -> web.Response:
    items = [{"metadata": {"name": f"pod-{i}", "annotations": {"a": "b" * 1000}}} for i in range(1000)]
    return web.Response(body=orjson.dumps({"kind": "PodList", "items": items}), content_type="application/json")


@pytest.fixture
async def server_config(tmp_path: Path) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/api/v1/namespaces/default/pods", huge_status)
    app.router.add_get("/api/v1/pods", big_success)
    app.router.add_get("/api/v1/namespaces/default/configmaps", chunked_text)
    app.router.add_get("/api/v1/namespaces/default/secrets", long_status)
    app.router.add_get("/apis/coordination.k8s.io/v1/namespaces/default/leases/autoscaler", huge_status)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "main",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    try:
        yield str(path)
    finally:
        await runner.cleanup()


async def test_a_huge_status_is_read_in_part_and_its_message_cut(server_config: str) -> None:
    async with await make_api_client(server_config) as client:
        api = KubeApi(client)
        with pytest.raises(KubeError) as caught:
            await api.get("/api/v1/namespaces/default/pods")
        error = caught.value
        assert error.status == 500 and len(error.message) < MESSAGE_LIMIT + 100, len(error.message)
        # A Status cut short is no JSON: its head is shown, with what was not read counted
        unread = len(status("x" * HUGE)) - 300
        assert error.message.startswith('GET /api/v1/namespaces/default/pods: {"kind":"Status"')
        assert error.message.endswith(f"… ({unread:,} bytes cut)"), error.message[-80:]
        # the client stays usable (the half-read connection was dropped, not pooled)
        listed = await api.get("/api/v1/pods")
        assert len(listed["items"]) == 1000  # a success of ~1 MiB is read whole


async def test_a_chunked_page_of_unknown_length_is_read_in_part(server_config: str) -> None:
    async with await make_api_client(server_config) as client:
        with pytest.raises(KubeError) as caught:
            await KubeApi(client).get("/api/v1/namespaces/default/configmaps")
    message = caught.value.message
    assert "<html><body>Bad gateway</body></html>" in message
    assert message.endswith(f"… (more than {ERROR_BODY_LIMIT - 300:,} bytes cut)"), message[-80:]


async def test_a_long_status_message_is_cut(server_config: str) -> None:
    async with await make_api_client(server_config) as client:
        with pytest.raises(KubeError) as caught:
            await KubeApi(client).get("/api/v1/namespaces/default/secrets")
    error = caught.value
    assert error.conflict and error.reason == "InternalError"
    assert error.message == "z" * MESSAGE_LIMIT + f"… ({5000 - MESSAGE_LIMIT:,} characters cut)"


async def test_the_generated_api_classes_read_error_bodies_in_part_too(server_config: str) -> None:
    """The Lease goes through kubernetes-asyncio's generated CoordinationV1Api, which reads the whole body
    into its ApiException: the session's response class bounds that read."""
    async with await make_api_client(server_config) as client:
        with pytest.raises(ApiException) as caught:
            await CoordinationV1Api(client).read_namespaced_lease("autoscaler", "default", _request_timeout=10)
    body = str(caught.value.body)  # typed bytes; kubernetes-asyncio decodes it
    assert caught.value.status == 500
    assert len(body) < ERROR_BODY_LIMIT + 100
    assert body.endswith(f"… ({len(status('x' * HUGE)) - ERROR_BODY_LIMIT:,} bytes cut)"), body[-80:]
