"""F41: who reads ``/api/targets``. It served every target's status, unauthenticated, on every interface;
now ``http.address`` binds the port where told (loopback here) and ``http.tokenFile`` makes everything but
the probes ask for a token. The real ``autoscaler run``, asked as a client on the network would ask it."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import wait_until
from tests.chaos.watch import scaling_active
from tests.chaos.world import target
from tests.service.cluster import deployment

TOKEN = "api-token-0b8e5d71"


async def test_f41_the_api_answers_the_token_only_on_the_address_it_was_given(
    chaos: Chaos, cluster: KubeEmulator, tmp_path: Path
) -> None:
    token = tmp_path / "api-token"
    token.write_text(TOKEN + "\n")
    cluster.create(deployment("web", 2))
    cluster.create(target("web"))
    instance = await chaos.service("one", http={"address": "127.0.0.1", "port": 0, "tokenFile": str(token)})
    await wait_until(lambda: scaling_active(cluster, "web").get("status") is not None, 30, "a first decision")
    base = f"http://127.0.0.1:{instance.port}"

    async def status(path: str, token: str | None = None, base: str = base) -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
            session.get(base + path, headers=headers) as response,
        ):
            return response.status, await response.text()

    for path in ("/api/targets", "/api/targets/default/web", "/metrics"):
        assert (await status(path))[0] == 401, path
        assert (await status(path, "not-the-token"))[0] == 401, path
    code, body = await status("/api/targets", TOKEN)
    assert code == 200 and '"name":"web"' in body
    assert (await status("/metrics", TOKEN))[0] == 200
    assert (await status("/healthz"))[0] == 200, "the kubelet's probes carry no token"
    assert (await status("/readyz"))[0] in (200, 503)
    with pytest.raises(aiohttp.ClientConnectorError):
        await status("/healthz", base=f"http://127.0.0.2:{instance.port}")  # bound to loopback: not there
    assert TOKEN not in instance.log.read_text(errors="replace")
