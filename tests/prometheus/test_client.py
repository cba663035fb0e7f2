"""Client faults against a scriptable fake Prometheus: every failure gives its typed error."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from autoscaler.core.observation import MetricFailure
from autoscaler.prometheus import (
    MetricsReader,
    PrometheusBadQuery,
    PrometheusClient,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusMalformedResponse,
    PrometheusResponseTooLarge,
    PrometheusSettings,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler.prometheus.auth import PrometheusCredentialsError
from autoscaler.prometheus.settings import BasicAuth
from tests.guard import REQUIRE_SERVERS
from tests.prometheus import scenario as sc
from tests.prometheus.fake_server import (
    FakePrometheus,
    Request,
    constant,
    error_response,
    json_response,
    sequence,
    vector,
)


@pytest.fixture
async def fake() -> AsyncIterator[FakePrometheus]:
    server = await FakePrometheus().start()
    yield server
    await server.close()


def settings_for(url: str, **overrides: object) -> PrometheusSettings:
    return PrometheusSettings(url=url, **overrides)  # type: ignore[arg-type]


async def test_request_is_a_form_post_with_explicit_time_and_budget(fake: FakePrometheus) -> None:
    settings = settings_for(
        fake.url, headers={"X-Scope-OrgID": "team-a"}, query_parameters={"dedup": "true"}, timeout_seconds=2.0
    )
    async with PrometheusClient(settings) as client:
        result = await client.query('up{job="x"}', 1700000000.25)
    assert result.vector[0].value == "1"
    request = fake.requests[0]
    assert request.path == "/api/v1/query"
    assert request.form["query"] == 'up{job="x"}' and request.form["time"] == "1700000000.250"
    assert request.form["dedup"] == "true"
    assert request.form["timeout"].endswith("ms") or request.form["timeout"].endswith("s")
    assert request.headers["X-Scope-OrgID"] == "team-a"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert "Accept-Encoding" not in request.headers  # uncompressed unless asked for


async def test_compressed_answers_only_when_asked_for(fake: FakePrometheus) -> None:
    def gzipped() -> web.StreamResponse:
        response = json_response(vector("7"))
        response.enable_compression(web.ContentCoding.gzip)
        return response

    fake.handler = constant(gzipped)
    async with PrometheusClient(settings_for(fake.url, compression=True)) as client:
        assert (await client.query("x", 1.0)).vector[0].value == "7"
    assert "gzip" in fake.requests[-1].headers["Accept-Encoding"]
    async with PrometheusClient(settings_for(fake.url)) as client:
        assert (await client.query("x", 1.0)).vector[0].value == "7"
    assert "Accept-Encoding" not in fake.requests[-1].headers


async def test_5xx_is_retried_with_backoff_then_succeeds(fake: FakePrometheus) -> None:
    fake.handler = sequence(
        constant(lambda: error_response(503, "unavailable", "starting up")),
        constant(lambda: json_response(vector("2"))),
    )
    async with PrometheusClient(settings_for(fake.url, retries=2)) as client:
        result = await client.query("x", 1.0)
        assert result.vector[0].value == "2"
        assert client.stats.retries == 1 and client.stats.http_requests == 2


async def test_persistent_5xx_fails_after_the_retries_with_prometheus_text(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: error_response(500, "internal", "storage is on fire"))
    async with PrometheusClient(settings_for(fake.url, retries=2)) as client:
        with pytest.raises(PrometheusHTTPError) as raised:
            await client.query("x", 1.0)
    assert len(fake.requests) == 3
    assert raised.value.status == 500 and raised.value.error_type == "internal"
    assert "HTTP 500: internal: storage is on fire" in str(raised.value)


@pytest.mark.parametrize("status, error_type", [(400, "bad_data"), (422, "execution")])
async def test_4xx_with_error_body_is_a_bad_query_and_not_retried(
    fake: FakePrometheus, status: int, error_type: str
) -> None:
    fake.handler = constant(lambda: error_response(status, error_type, '1:5: parse error: unclosed "("'))
    async with PrometheusClient(settings_for(fake.url)) as client:
        with pytest.raises(PrometheusBadQuery) as raised:
            await client.query("sum(x", 1.0)
        rows = await MetricsReader(client, client.settings).read([sc.web([sc.external_metric("sum(x")])], 1.0)
    assert len(fake.requests) == 2
    assert raised.value.status == status and raised.value.error_type == error_type
    assert 'parse error: unclosed "("' in str(raised.value)
    failure = rows[0][0]
    assert isinstance(failure, MetricFailure)
    assert failure.message.startswith('External metric "queue": querying Prometheus failed: ')
    assert f"HTTP {status}, {error_type}: 1:5: parse error" in failure.message and "query: sum(x" in failure.message


async def test_prometheus_side_timeout_is_a_timeout(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: error_response(503, "timeout", "query timed out in expression evaluation"))
    async with PrometheusClient(settings_for(fake.url)) as client:
        with pytest.raises(PrometheusTimeout, match="timed the query out"):
            await client.query("x", 1.0)
    assert len(fake.requests) == 1


async def test_a_slow_server_times_out_at_the_deadline(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: json_response(vector("1")), delay=5)
    async with PrometheusClient(settings_for(fake.url, timeout_seconds=0.3)) as client:
        started = time.monotonic()
        with pytest.raises(PrometheusTimeout, match=r"did not answer within 0\.3s"):
            await client.query("x", 1.0)
        assert time.monotonic() - started < 0.6
    assert fake.requests[0].form["timeout"] in {"300ms", "299ms", "298ms"}


@pytest.mark.parametrize(
    "body, content_type, fragment",
    [
        ("<html>oops</html>", "text/html", "not JSON (text/html"),
        ('{"status": "success"}', "application/json", "no 'data' object"),
        (
            '{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}',
            "application/json",
            "a vector element is not",
        ),
        ('{"status":"success","data":{"resultType":"nonsense","result":[]}}', "application/json", "unknown resultType"),
    ],
)
async def test_malformed_responses(fake: FakePrometheus, body: str, content_type: str, fragment: str) -> None:
    fake.handler = constant(lambda: web.Response(text=body, content_type=content_type))
    async with PrometheusClient(settings_for(fake.url)) as client:
        with pytest.raises(PrometheusMalformedResponse, match="malformed Prometheus response") as raised:
            await client.query("x", 1.0)
    assert fragment in str(raised.value)


async def test_proxy_error_page_is_an_http_error_with_a_snippet(fake: FakePrometheus) -> None:
    fake.handler = constant(
        lambda: web.Response(text="<html><body>Bad   Gateway</body></html>", status=502, content_type="text/html")
    )
    async with PrometheusClient(settings_for(fake.url, retries=0)) as client:
        with pytest.raises(PrometheusHTTPError, match="HTTP 502: <html><body>Bad Gateway</body></html>"):
            await client.query("x", 1.0)


async def test_unreachable_is_typed_and_retried_quickly() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connection refused
        async with PrometheusClient(settings_for(f"http://127.0.0.1:{port}", retries=2)) as client:
            started = time.monotonic()
            with pytest.raises(PrometheusUnreachable, match=f"127.0.0.1:{port} is unreachable"):
                await client.query("x", 1.0)
            assert time.monotonic() - started < 1.0
            assert client.stats.http_requests == 3 and client.stats.failures == {"unreachable": 1}
            assert not await client.ready()


async def test_concurrency_is_bounded(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: json_response(vector("1")), delay=0.05)
    async with PrometheusClient(settings_for(fake.url, concurrency=3)) as client:
        await asyncio.gather(*(client.query(f"q{i}", 1.0) for i in range(20)))
    assert fake.max_in_flight == 3


async def test_cancellation_frees_the_slot(fake: FakePrometheus) -> None:
    fake.handler = sequence(
        constant(lambda: json_response(vector("1")), delay=10), constant(lambda: json_response(vector("2")))
    )
    async with PrometheusClient(settings_for(fake.url, concurrency=1)) as client:
        stuck = asyncio.create_task(client.query("slow", 1.0))
        await asyncio.sleep(0.1)
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        async with asyncio.timeout(2):
            assert (await client.query("fast", 1.0)).vector[0].value == "2"


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
    directory = tmp_path_factory.mktemp("pki")
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


async def test_a_live_query_sends_no_time_and_hands_over_the_date(fake: FakePrometheus) -> None:
    seen: list[tuple[float, float, float]] = []
    async with PrometheusClient(
        settings_for(fake.url), observe_server_time=lambda *s: seen.append(s), clock=lambda: 5000.0
    ) as client:
        await client.query("up")
    assert "time" not in fake.requests[0].form
    [(server, sent, received)] = seen
    assert abs(server - time.time()) < 5 and sent == received == 5000.0


async def test_the_deadline_covers_the_wait_for_a_slot(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: json_response(vector("1")), delay=3)
    async with PrometheusClient(settings_for(fake.url, concurrency=1, timeout_seconds=1.0)) as client:
        first = asyncio.create_task(client.query("slow"))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(PrometheusTimeout, match="no free slot"):
            await client.query("queued", deadline=asyncio.get_running_loop().time() + 0.3)
        assert time.monotonic() - started < 0.9
        with pytest.raises(PrometheusTimeout):
            await first
    assert len(fake.requests) == 1  # the queued query was never sent


async def test_an_answer_past_the_cap_fails_its_query(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: json_response(vector(*["1"] * 2000)))
    async with PrometheusClient(settings_for(fake.url, max_response_bytes=4096)) as client:
        with pytest.raises(PrometheusResponseTooLarge, match="maxResponseBytes"):
            await client.query("x")
        fake.handler = constant(lambda: json_response(vector("7")))
        assert (await client.query("x")).vector[0].value == "7"  # the pool is still usable


async def test_a_large_answer_is_parsed_in_pieces_without_the_series_left_out(fake: FakePrometheus) -> None:
    fake.handler = constant(lambda: json_response(vector(*[str(i) for i in range(500)])))
    async with PrometheusClient(settings_for(fake.url, large_response_bytes=1000)) as client:
        result = await client.query("x", keep=lambda labels: int(labels["i"]) % 100 == 0)
        everything = await client.query("x")
        assert client.stats.large_answers == 2
    assert [s.value for s in result.vector] == ["0", "100", "200", "300", "400"] and result.left_out == 495
    assert len(everything.vector) == 500 and everything.left_out == 0


async def test_a_connection_dropped_mid_request_is_redialled_once(fake: FakePrometheus) -> None:
    dropped = 0

    async def drop_first(request: Request) -> web.StreamResponse:
        nonlocal dropped
        if dropped == 0:
            dropped += 1
            assert fake.transport is not None
            fake.transport.abort()  # the connection dies without an answer, as in a restart
            await asyncio.sleep(1)
        return json_response(vector("3"))

    fake.handler = drop_first
    async with PrometheusClient(settings_for(fake.url, retries=0)) as client:
        assert (await client.query("x")).vector[0].value == "3"
        assert client.stats.redials == 1 and client.stats.retries == 0
