"""Credentials and custom headers against real servers behind basic auth: Prometheus (``--web.config.file``)
and VictoriaMetrics (``-httpAuth.*``). The client's auth header opens them, a wrong password gets a 401 that
says to check the credentials (and never shows the password), and the extra headers a backend needs
elsewhere (Mimir's ``X-Scope-OrgID``) and the parameters that deny partial answers are harmless to both."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import pytest

from autoscaler.prometheus import PrometheusClient, PrometheusHTTPError, PrometheusSettings
from autoscaler.prometheus.settings import BasicAuth
from autoscaler_sandbox import PrometheusSandbox
from tests.prometheus.conftest import BACKENDS, _guard

pytestmark = pytest.mark.prometheus

USER, PASSWORD = "autoscaler", "s3cret-pw"
# bcrypt of PASSWORD at cost 4 (Prometheus' web config wants a hash; a low cost keeps each request cheap).
PASSWORD_HASH = "$2b$04$BhWNzWor/lrsyTIkwx7lrezq7J07/AqCBbcgBwKSPPFzc8zgY0N4a"


@pytest.fixture(params=list(BACKENDS))
def guarded(request: pytest.FixtureRequest) -> Iterator[PrometheusSandbox]:
    """A private, empty server of each backend that answers only with USER's credentials."""
    _guard.require(request.param)
    sandbox_class: Callable[..., PrometheusSandbox] = BACKENDS[request.param]
    if request.param == "prometheus":
        sandbox = sandbox_class()
        web_config = sandbox.work_dir / "web.yml"
        web_config.write_text(f"basic_auth_users:\n  {USER}: {PASSWORD_HASH}\n")
        sandbox.extra_args.append(f"--web.config.file={web_config}")
    else:
        sandbox = sandbox_class(extra_args=[f"-httpAuth.username={USER}", f"-httpAuth.password={PASSWORD}"])
    token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    sandbox.request_headers["Authorization"] = f"Basic {token}"
    with sandbox:
        yield sandbox


async def test_basic_auth_and_custom_headers_against_a_real_server(guarded: PrometheusSandbox) -> None:
    settings = PrometheusSettings(
        url=guarded.url,
        basic_auth=BasicAuth(USER, PASSWORD),
        retries=0,
        headers={"X-Scope-OrgID": "team-a"},
        query_parameters={"dedup": "true"},
    )
    async with PrometheusClient(settings) as client:
        result = await client.query("vector(7)")
        assert [s.value for s in result.vector] == ["7"]
        assert await client.ready()
    for wrong in (BasicAuth(USER, "not-the-password"), None):
        async with PrometheusClient(PrometheusSettings(url=guarded.url, basic_auth=wrong, retries=0)) as client:
            with pytest.raises(PrometheusHTTPError) as raised:
                await client.query("vector(7)")
            assert raised.value.status == 401 and "check the credentials" in str(raised.value)
            assert "not-the-password" not in str(raised.value)
            # Prometheus guards /-/ready too; VictoriaMetrics answers it to anyone (it is a health check).
            assert await client.ready() is (guarded.kind == "victoriametrics")
