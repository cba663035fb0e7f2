"""A metrics backend that fails (``--brownout SHARE``): what the service writes to the API server meanwhile.

The services reach Prometheus through :class:`FaultyPrometheus`, a proxy that forwards every request and,
while its ``share`` is above 0, answers that share of the queries (chosen at random, so a different few
each sync) ``503 unavailable`` instead: a brownout (1.0: an outage). After the steady window the harness
turns it on for ``--brownout-periods`` periods and counts the API writes of each period (status patches,
Events created and counted up; the Lease aside), then turns it off and times how long until every target is
ScalingActive True again (issue 37, item 5: the writes a period stay flat in the number of targets).
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from servicebench.cluster import TARGETS, Workload
from servicebench.process import ServiceProcess
from servicebench.samples import parse_metrics, total
from servicebench.window import WRITE_VERBS, Harness

# The log lines a failing backend causes by design (service/backends/health.py, prometheus/sending.py): not
# the warnings the run's checks look for.
BROWNOUT_WARNINGS = frozenset({"Prometheus degraded", "Prometheus query failed", "Prometheus query timed out"})
_UNAVAILABLE = orjson.dumps({"status": "error", "errorType": "unavailable", "error": "too many queries in flight"})


class FaultyPrometheus:
    """Prometheus behind a proxy that fails ``share`` of the queries with 503 (0: none, it only forwards)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.share = 0.0
        self.failed = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    async def start(self) -> FaultyPrometheus:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120))
        app = web.Application(client_max_size=256 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if self.share and request.path.endswith("/query") and random.random() < self.share:
            self.failed += 1
            return web.Response(body=_UNAVAILABLE, status=503, content_type="application/json")
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "authorization")}
        async with self._session.request(
            request.method, self.upstream + request.path_qs, data=body or None, headers=headers
        ) as response:
            payload = await response.read()
            return web.Response(body=payload, status=response.status, content_type=response.content_type)


def _writes(counts: dict[str, int]) -> dict[str, int]:
    """The API writes among the emulator's counts, the Lease's aside, by kind."""
    kinds = {
        "patch scalingtargets/status": "status",
        "create events": "events created",
        "patch events": "events counted",
    }
    out = dict.fromkeys(kinds.values(), 0)
    out["other"] = 0
    for key, value in counts.items():
        verb, _, resource = key.partition(" ")
        if verb in WRITE_VERBS and not resource.startswith("leases"):
            out[kinds.get(key, "other")] += value
    return out


async def brownout(
    h: Harness, proxy: FaultyPrometheus, services: list[ServiceProcess], plan: list[Workload]
) -> dict[str, Any]:
    """The brownout phase: its writes per period, the backend's state as the service reports it, and the
    recovery."""
    args = h.args
    proxy.share = args.brownout
    began = time.monotonic()
    before = _writes(h.emu.requests.counts())
    per_period: list[dict[str, int]] = []
    for index in range(args.brownout_periods):
        await asyncio.sleep(max(0.0, began + (index + 1) * args.period - time.monotonic()))
        now = _writes(h.emu.requests.counts())
        per_period.append({k: now[k] - before[k] for k in now})
        before = now
    reported = [parse_metrics(await h.text(s.url + "/metrics")) for s in services]
    degraded = [total(m, "autoscaler_prometheus_backend_degraded") for m in reported]
    held = {
        kind: sum(total(m, "autoscaler_prometheus_backend_held_writes_total", kind=kind) for m in reported)
        for kind in ("status", "event")
    }
    proxy.share = 0.0
    ended = time.monotonic()
    recovered: float | None = None
    while time.monotonic() - ended < 20 * args.period:
        if all(_active(h, w) for w in plan):
            recovered = time.monotonic() - ended
            break
        await asyncio.sleep(1.0)
    return {
        "share": args.brownout,
        "periods": per_period,
        "queries_failed": proxy.failed,
        "degraded": degraded,
        "held": held,
        "recovered_s": recovered,
    }


def _active(h: Harness, w: Workload) -> bool:
    status = (h.emu.get(TARGETS, w.name, w.namespace) or {}).get("status") or {}
    return any(c.get("type") == "ScalingActive" and c.get("status") == "True" for c in status.get("conditions") or [])


def brownout_report(result: dict[str, Any], period: float) -> list[str]:
    """The brownout's section of the report."""
    periods: list[dict[str, int]] = result["periods"]
    lines = [
        f"**backend brownout** ({result['share'] * 100:.0f} % of the queries answered 503 for {len(periods)} periods "
        f"of {period:g} s; {result['queries_failed']:,} queries failed)",
        "",
        "| period | status writes | Events created | Events counted up | other writes | all |",
        "|---|---|---|---|---|---|",
    ]
    for index, writes in enumerate(periods, 1):
        lines.append(
            f"| {index} | {writes['status']} | {writes['events created']} | {writes['events counted']} | "
            f"{writes['other']} | {sum(writes.values())} |"
        )
    recovered = result["recovered_s"]
    lines += [
        "",
        "backend degraded (`autoscaler_prometheus_backend_degraded`, each service): "
        + ", ".join(f"{d:g}" for d in result["degraded"])
        + f"; writes held: status {result['held']['status']:.0f}, Events {result['held']['event']:.0f}; every target "
        + (
            f"ScalingActive True {recovered:.1f} s after the brownout ended"
            if recovered is not None
            else f"not ScalingActive True {20 * period:g} s after the brownout ended"
        ),
    ]
    return lines
