"""F44: an error answer with a huge body (a LIST answered 500 with a 30 MB Status) is read only in part.

Promise: of any error answer from the API server the service reads at most 64 KiB (the rest is not read:
the connection is dropped), and what it repeats of it — the cache's error in ``/readyz``, the log line,
a target's condition — is at most ~1 KiB, cut with a note of how much was left out. The process's memory
stays near its baseline, and ``/readyz`` still says which cache fails and why.

Before the fix, every failed LIST was read whole and kept (the error of each cache, its log line, and
``/readyz`` repeating every cache's error): hundreds of MiB of RSS and ``/readyz`` bodies of ~100 MB.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.relay import requests_matching
from tests.chaos.service import ServiceProcess, wait_until
from tests.chaos.world import condition, set_load, target
from tests.service.cluster import deployment

WATCHES = requests_matching(r"watch=true")
HUGE = 30_000_000  # bytes of the error's message
RSS_MARGIN = 64 * 2**20  # what the process may grow by while the errors come (it read ~30 MB per answer before)


def rss_bytes(pid: int) -> int:
    """The resident set of process ``pid`` now (``VmRSS`` of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


async def readyz(service: ServiceProcess) -> tuple[int, str]:
    return await service.get("/readyz", seconds=30)


async def test_a_huge_error_body_is_read_in_part_and_repeated_in_part(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox
) -> None:
    """F44: every LIST answered 500 with a 30 MB message for ~20 s while /readyz is polled: failed before
    (RSS grew by hundreds of MiB; /readyz answered bodies of tens of MB). Now the RSS stays within 64 MiB
    of its baseline, /readyz stays under 64 KiB and names the failing caches with the error cut short,
    no log line passes 16 KiB, and the service recovers once the LISTs succeed again."""
    await set_load(exporter, prometheus, 20)
    cluster.create(deployment("web", 2))
    cluster.create(target("web"))
    service = await chaos.service("one")
    await wait_until(
        lambda: condition(cluster, "web", "ScalingActive").get("status") == "True", what="the first decision"
    )
    await wait_until(lambda: len(service.relay.matching(WATCHES)) >= 3, what="the watches to be open")
    await wait_until(lambda: _ready(service), seconds=20, what="/readyz to pass")
    await asyncio.sleep(2)  # a few syncs at the steady state
    baseline = max([rss_bytes(service.pid) for _ in range(3)])

    failing = cluster.faults.error(500, message="x" * HUGE, verb="list")
    assert service.relay.cut(WATCHES) >= 3  # every cache relists, and each LIST meets the 500
    loop = asyncio.get_running_loop()
    ends = loop.time() + 20
    sizes: list[int] = []
    peak = baseline
    while loop.time() < ends:
        status, text = await readyz(service)
        sizes.append(len(text))
        peak = max(peak, rss_bytes(service.pid))
        await asyncio.sleep(0.5)
    assert failing.fired >= 6, failing.fired  # several caches, each retrying after its backoff
    assert max(sizes) < 64 * 1024, max(sizes)
    assert peak - baseline < RSS_MARGIN, f"RSS grew by {(peak - baseline) / 2**20:.0f} MiB"

    status, text = await readyz(service)
    assert status == 503 and len(text) < 64 * 1024, (status, len(text))
    _, body = await service.ready()
    detail = next(c["detail"] for c in body["checks"] if c["name"] == "caches")
    assert "pods" in detail and "500" in detail and "cut" in detail, detail[:2000]
    longest = max(len(line) for line in service.log.read_text(errors="replace").splitlines())
    assert longest < 16 * 1024, longest
    message = condition(cluster, "web", "ScalingActive").get("message", "")
    assert len(message) < 4096, len(message)

    cluster.faults.remove(failing)
    await wait_until(lambda: _ready(service), seconds=90, what="/readyz to pass once the LISTs succeed")
    assert not service.tracebacks()


async def _ready(service: ServiceProcess) -> bool:
    ready, _ = await service.ready()
    return ready
