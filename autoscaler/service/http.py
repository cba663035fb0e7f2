"""The service's one HTTP server: probes, metrics, and the targets' in-memory status.

============================  ====================================================================
``GET /healthz``              200 while a heartbeat task keeps running (the event loop is alive and
                              not starved) and every liveness check passes (the watch caches' tasks
                              run); 503 once the heartbeat has not run for ``liveness_timeout`` seconds
                              or a liveness check fails.
``GET /readyz``               200 when every readiness check passes, else 503. Checks run concurrently,
                              each bounded by its timeout: a hung check fails, it never hangs the probe.
``GET /metrics``              The :class:`ServiceMetrics` registry (text format, or OpenMetrics when
                              asked for), rendered in a worker thread so a large scrape does not stall
                              the event loop, gzipped when the scraper accepts it.
``GET /api/targets``          ``{"items": [{"namespace", "name", "status"}…]}`` (``?namespace=`` filters)
``GET /api/targets/{ns}/{n}`` ``{"namespace", "name", "status"}``, or 404
``GET /api/backends``         ``{"items": [{"backend", "name", "conditions"}…]}``: each Prometheus backend's
                              condition ``PrometheusDegraded`` (:mod:`autoscaler.service.backends.health`)
============================  ====================================================================

Bodies of the probes are JSON too (``{"ready": false, "checks": [{"name", "ok", "detail"}…]}``), so a
human or ``kubectl get --raw`` can see which check failed. Exception text in a detail is redacted; a
detail is cut to 4 KiB (a failing cache's error may be a server's megabytes).

Who may ask: whoever reaches ``http.address``:``http.port`` (``0.0.0.0``: every interface), and with
``http.tokenFile`` only a request with its token, but for the probes (:mod:`autoscaler.service.http_auth`).
Every status and detail is redacted of the secrets the service knows (:mod:`autoscaler.service.telemetry.redaction`).
"""

from __future__ import annotations

import asyncio
import gzip
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from aiohttp import web
from aiohttp.log import access_logger

from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.http_auth import ApiToken
from autoscaler.service.settings import HttpSettings
from autoscaler.service.telemetry.logs import redact_text
from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.service.telemetry.redaction import redacted_status
from autoscaler.values.clipping import clip

log = structlog.stdlib.get_logger(__name__)

CheckResult = tuple[bool, str]
CheckFunction = Callable[[], CheckResult | Awaitable[CheckResult]]
# /api/targets' items in one turn of the event loop: at 10,000 targets, parsing and encoding every status
# at once held the loop for the whole request.
_ITEMS_PER_TURN = 100
# The most of a check's detail a probe answers with: a detail may repeat a server's error (cut shorter where
# it is made), and a probe is asked every few seconds.
DETAIL_LIMIT = 4096


class TargetStatuses(Protocol):
    """What ``/api/targets`` reads: which targets have a status, and one target's, parsed when asked."""

    def status_keys(self, namespace: str | None) -> list[tuple[str, str]]:
        """The targets with a status (of ``namespace`` only, unless None), in any order."""

    def status_of(self, key: tuple[str, str]) -> Mapping[str, Any] | None: ...


class StatusMap:
    """:class:`TargetStatuses` from a mapping (before the service has its targets, and in tests)."""

    def __init__(self, documents: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> None:
        self.documents = documents or {}

    def status_keys(self, namespace: str | None) -> list[tuple[str, str]]:
        return [key for key in self.documents if namespace is None or key[0] == namespace]

    def status_of(self, key: tuple[str, str]) -> Mapping[str, Any] | None:
        return self.documents.get(key)


@dataclass(frozen=True, slots=True)
class ReadinessCheck:
    """A named check returning ``(ok, detail)``, plainly or as an awaitable. A synchronous check must not
    block (read state the service keeps, e.g. "the last Prometheus query succeeded 3 s ago"); an
    asynchronous one is cancelled after ``timeout`` (default: the server's ``check_timeout``)."""

    name: str
    check: CheckFunction
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class ProbeTiming:
    """How the probes are timed: an asynchronous check's default bound, the heartbeat behind ``/healthz``
    and how stale it may get, and the clock they are read on."""

    check_timeout: float = 2.0
    heartbeat_interval: float = 1.0
    liveness_timeout: float = 10.0
    clock: Callable[[], float] = time.monotonic


class HttpServer:
    def __init__(
        self,
        settings: HttpSettings,
        metrics: ServiceMetrics,
        *,
        readiness: Sequence[ReadinessCheck] = (),
        liveness: Sequence[ReadinessCheck] = (),
        targets: TargetStatuses | None = None,
        timing: ProbeTiming = ProbeTiming(),
        access_log: bool = False,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.readiness = tuple(readiness)
        self.liveness = tuple(liveness)
        self.targets: TargetStatuses = targets or StatusMap()  # the service sets its manager's once it has one
        self.backends: Callable[[], list[dict[str, Any]]] = list  # each backend's document (the service sets it)
        self.redaction = KnownSecrets()  # likewise: its one redaction (service/telemetry/redaction.py)
        self.check_timeout = timing.check_timeout
        self.heartbeat_interval = timing.heartbeat_interval
        self.liveness_timeout = timing.liveness_timeout
        self._access_log = access_log
        self._clock = timing.clock
        self._last_beat = self._clock()
        self._heartbeat: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._stray_checks: set[asyncio.Future[Any]] = set()

    @property
    def port(self) -> int:
        """The bound port (the real one when the settings ask for port 0)."""
        if self._port is None:
            raise RuntimeError("the HTTP server is not started")
        return self._port

    def application(self, token: ApiToken | None = None) -> web.Application:
        """The routes; with ``token`` (``http.tokenFile``), all but the probes ask for it."""
        app = web.Application(middlewares=[token.middleware] if token is not None else [])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/api/targets", self._targets)
        app.router.add_get("/api/targets/{namespace}/{name}", self._target)
        app.router.add_get("/api/backends", self._backends)
        return app

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the HTTP server is already started")
        token = ApiToken(self.settings.token_file) if self.settings.token_file else None
        if token is not None:
            await asyncio.to_thread(token.load)  # TokenFileError: the service does not start unprotected
        self._last_beat = self._clock()
        self._heartbeat = asyncio.create_task(self._beat(), name="http-heartbeat")
        # "aiohttp.access" goes through structlog like every stdlib logger (see logs.py); off by default,
        # because probes and scrapes would be most of the log.
        runner = web.AppRunner(
            self.application(token), access_log=access_logger if self._access_log else None, shutdown_timeout=2.0
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.settings.address, self.settings.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self._stop_heartbeat()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        log.info("http.started", address=self.settings.address, port=self._port, token=token is not None)

    async def stop(self) -> None:
        """Stop listening, give requests in progress up to 2 s, stop the heartbeat. Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self._stop_heartbeat()
        self._port = None

    async def _stop_heartbeat(self) -> None:
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _beat(self) -> None:
        while True:
            self._last_beat = self._clock()
            await asyncio.sleep(self.heartbeat_interval)

    # ---- probes ---------------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        age = self._clock() - self._last_beat
        alive = self._heartbeat is not None and not self._heartbeat.done() and age <= self.liveness_timeout
        body: dict[str, Any] = {"alive": alive, "heartbeat_age_seconds": round(age, 3)}
        if self.liveness:
            results = await asyncio.gather(*(self._run_check(check) for check in self.liveness))
            body["checks"] = [
                {"name": check.name, "ok": ok, "detail": detail}
                for check, (ok, detail) in zip(self.liveness, results, strict=True)
            ]
            alive = body["alive"] = alive and all(ok for ok, _ in results)
        return _json(body, 200 if alive else 503)

    async def _readyz(self, request: web.Request) -> web.Response:
        results = await asyncio.gather(*(self._run_check(check) for check in self.readiness))
        checks = [
            {"name": check.name, "ok": ok, "detail": detail}
            for check, (ok, detail) in zip(self.readiness, results, strict=True)
        ]
        ready = all(ok for ok, _ in results)
        return _json({"ready": ready, "checks": checks}, 200 if ready else 503)

    async def _run_check(self, check: ReadinessCheck) -> CheckResult:
        timeout = check.timeout if check.timeout is not None else self.check_timeout
        try:
            result = check.check()
            if inspect.isawaitable(result):
                # Not awaited directly: a check that swallows its cancellation must not hold the probe.
                future = asyncio.ensure_future(result)
                done, _ = await asyncio.wait({future}, timeout=timeout)
                if not done:
                    future.cancel()
                    self._stray_checks.add(future)
                    future.add_done_callback(self._forget_check)
                    return False, f"timed out after {timeout:g}s"
                result = future.result()
            ok, detail = result
            return bool(ok), clip(self.redaction.redact(str(detail)), DETAIL_LIMIT)
        except Exception as exc:
            return False, clip(self.redaction.redact(redact_text(f"{type(exc).__name__}: {exc}")), DETAIL_LIMIT)

    def _forget_check(self, future: asyncio.Future[Any]) -> None:
        self._stray_checks.discard(future)
        if not future.cancelled():
            future.exception()  # retrieved, so asyncio does not log "exception was never retrieved"

    # ---- metrics --------------------------------------------------------------------------------

    async def _metrics(self, request: web.Request) -> web.Response:
        accept = request.headers.get("Accept", "")
        use_gzip = "gzip" in request.headers.get("Accept-Encoding", "")

        def render() -> tuple[bytes, str]:  # in a worker thread: thousands of per-target series to format
            body, content_type = self.metrics.exposition(accept)
            return (gzip.compress(body, compresslevel=1) if use_gzip else body), content_type

        body, content_type = await asyncio.to_thread(render)
        headers = {"Content-Type": content_type}
        if use_gzip:
            headers["Content-Encoding"] = "gzip"
        return web.Response(body=body, headers=headers)

    # ---- target status --------------------------------------------------------------------------

    async def _targets(self, request: web.Request) -> web.Response:
        """Every target's status, a few at a time with the loop's turns between (each item is one
        target's status as it was when its turn came)."""
        items: list[str] = []
        for index, key in enumerate(sorted(self.targets.status_keys(request.query.get("namespace")))):
            if index and not index % _ITEMS_PER_TURN:
                await asyncio.sleep(0)
            status = self.targets.status_of(key)
            if status is not None:
                shown = redacted_status(self.redaction, status)
                items.append(_dumps({"namespace": key[0], "name": key[1], "status": shown}))
        return web.Response(text='{"items":[' + ",".join(items) + "]}", content_type="application/json")

    async def _target(self, request: web.Request) -> web.Response:
        key = (request.match_info["namespace"], request.match_info["name"])
        document = self.targets.status_of(key)
        if document is None:
            return _json({"error": f"no target {key[0]}/{key[1]}"}, 404)
        return _json({"namespace": key[0], "name": key[1], "status": redacted_status(self.redaction, document)})

    async def _backends(self, request: web.Request) -> web.Response:
        return _json({"items": self.backends()})


def _json(document: Any, status: int = 200) -> web.Response:
    return web.Response(text=_dumps(document), status=status, content_type="application/json")


def _dumps(document: Any) -> str:
    return json.dumps(document, default=str, separators=(",", ":"))
