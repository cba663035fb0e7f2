"""A metrics backend that fails (``--outage-periods``, ``--brownout SHARE``): what the service writes to the API
server meanwhile.

The services reach Prometheus through :class:`FaultyPrometheus`, a proxy that forwards every request and,
while its ``share`` is above 0, fails that share of the queries (chosen at random, so a different few each
sync) in one of two ways:

* ``error``: answered ``503 unavailable`` at once (share 1: an outage, Prometheus down behind its proxy);
* ``slow``: answered only after ``delay`` seconds, past the service's query deadline (the service gives up
  first: a Prometheus too loaded to answer in time, the brownout issue 41 names). Held here, never forwarded,
  so the real Prometheus is not loaded by queries nobody waits for.

After the steady window the harness runs each episode in turn (an outage, then a brownout): the fault for its
periods, the API writes of each period counted (status patches, Events created and counted up; the Lease
aside), then the fault off and the time until every target is ScalingActive True again (issues 37 and 41: the
writes a period stay flat in the number of targets).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from servicebench.cluster import TARGETS, Workload
from servicebench.process import ServiceProcess
from servicebench.samples import Samples, parse_metrics, total
from servicebench.window import WRITE_VERBS, Harness

# The log lines a failing backend causes by design (service/backends/health.py, prometheus/sending.py): not
# the warnings the run's checks look for.
# A slow answer is no answer (service/backends/outage.py): in a brownout the backend is "not reached" again after
# each query of it that answered in time.
BROWNOUT_WARNINGS = frozenset(
    {
        "Prometheus degraded",
        "Prometheus query failed",
        "Prometheus query timed out",
        "Prometheus cannot be reached: its metrics fail until it answers (said once until then)",
    }
)
_UNAVAILABLE = orjson.dumps({"status": "error", "errorType": "unavailable", "error": "too many queries in flight"})


class FaultyPrometheus:
    """Prometheus behind a proxy that fails ``share`` of the queries (0: none, it only forwards): answered 503
    (``mode`` "error") or only after ``delay`` seconds ("slow")."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.share = 0.0
        self.mode = "error"
        self.delay = 0.0
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
            if self.mode == "slow":
                # The client has given up by then (its deadline is shorter): what it is sent does not matter.
                await asyncio.sleep(self.delay)
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


@dataclass(frozen=True)
class Episode:
    """One fault the harness puts the backend through: ``share`` of the queries failed in ``mode`` for
    ``periods`` sync periods."""

    name: str  # "outage", "brownout"
    mode: str  # FaultyPrometheus.mode
    share: float
    periods: int

    def describe(self, delay: float) -> str:
        how = "answered 503" if self.mode == "error" else f"answered only after {delay:g} s (past the deadline)"
        return f"{self.share * 100:.0f} % of the queries {how} for {self.periods} periods"


def episodes(args: argparse.Namespace) -> list[Episode]:
    """The fault episodes the arguments ask for, in the order they run."""
    planned = []
    if args.outage_periods:
        planned.append(Episode("outage", "error", 1.0, args.outage_periods))
    if args.brownout:
        planned.append(Episode("brownout", args.brownout_kind, args.brownout, args.brownout_periods))
    return planned


async def episode(
    h: Harness, proxy: FaultyPrometheus, services: list[ServiceProcess], plan: list[Workload], fault: Episode
) -> dict[str, Any]:
    """One fault episode: its writes per period, the backend's state as the service reports it at its end,
    and the recovery after it."""
    period = h.args.period
    failed_before = proxy.failed
    held_before = _held(await _reported(h, services))
    proxy.mode, proxy.share = fault.mode, fault.share
    proxy.delay = slow_delay(services)
    began = time.monotonic()
    before = _writes(h.emu.requests.counts())
    per_period: list[dict[str, int]] = []
    for index in range(fault.periods):
        await asyncio.sleep(max(0.0, began + (index + 1) * period - time.monotonic()))
        now = _writes(h.emu.requests.counts())
        per_period.append({k: now[k] - before[k] for k in now})
        before = now
    reported = await _reported(h, services)
    degraded = [total(m, "autoscaler_prometheus_backend_degraded") for m in reported]
    held_after = _held(reported)
    proxy.share = 0.0
    ended = time.monotonic()
    recovered: float | None = None
    while time.monotonic() - ended < 20 * period:
        if all(_active(h, w) for w in plan):
            recovered = time.monotonic() - ended
            break
        await asyncio.sleep(1.0)
    after = _writes(h.emu.requests.counts())
    return {
        "name": fault.name,
        "mode": fault.mode,
        "share": fault.share,
        "delay_s": proxy.delay if fault.mode == "slow" else None,
        "periods": per_period,
        "queries_failed": proxy.failed - failed_before,
        "degraded": degraded,
        "held": {kind: held_after[kind] - held_before[kind] for kind in held_after},
        "recovered_s": recovered,
        "recovery_writes": sum(after[k] - before[k] for k in after),
    }


def slow_delay(services: list[ServiceProcess]) -> float:
    """How long a slow answer takes: past every service's query deadline."""
    return max(s.query_deadline for s in services) + 1.0


async def _reported(h: Harness, services: list[ServiceProcess]) -> list[Samples]:
    return [parse_metrics(await h.text(s.url + "/metrics")) for s in services]


def _held(reported: list[Samples]) -> dict[str, float]:
    """The services' writes held back by the backend's budget so far, by kind."""
    return {
        kind: sum(total(m, "autoscaler_prometheus_backend_held_writes_total", kind=kind) for m in reported)
        for kind in ("status", "event")
    }


def _active(h: Harness, w: Workload) -> bool:
    status = (h.emu.get(TARGETS, w.name, w.namespace) or {}).get("status") or {}
    return any(c.get("type") == "ScalingActive" and c.get("status") == "True" for c in status.get("conditions") or [])


def episode_report(result: dict[str, Any], period: float, targets: int) -> list[str]:
    """One fault episode's section of the report."""
    periods: list[dict[str, int]] = result["periods"]
    how = "answered 503" if result["mode"] == "error" else f"answered only after {result['delay_s']:g} s"
    lines = [
        f"**backend {result['name']}** ({targets:,} targets; {result['share'] * 100:.0f} % of the queries {how} "
        f"for {len(periods)} periods of {period:g} s; {result['queries_failed']:,} queries failed)",
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
            f"ScalingActive True {recovered:.1f} s after it ended ({result['recovery_writes']:,} writes meanwhile)"
            if recovered is not None
            else f"not ScalingActive True {20 * period:g} s after it ended"
        ),
    ]
    return lines
