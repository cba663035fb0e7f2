"""How much the service's own event loop is held up: its lag, and the cyclic collector's pauses.

Both feed :class:`~autoscaler.service.telemetry.metrics.ServiceMetrics`' histograms
(``autoscaler_event_loop_lag_seconds``,
``autoscaler_gc_pause_seconds``); a loop held up long enough delays every sync and, without the elector's
thread, the Lease. Apart from the metrics' module because these run (a task, a process-wide callback)
where the rest only records.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Sequence

from prometheus_client import Histogram


def track_gc_pauses(pauses: Sequence[Histogram]) -> Callable[[], None]:
    """Time every cyclic collection into ``pauses[generation]`` until the returned function is called
    (the interpreter's ``gc.callbacks`` are process-wide)."""
    started = [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        elif 0 <= info.get("generation", -1) < len(pauses):
            pauses[info["generation"]].observe(time.perf_counter() - started[0])

    gc.callbacks.append(callback)
    return lambda: gc.callbacks.remove(callback)


async def monitor_event_loop_lag(lag: Histogram, interval: float = 0.5) -> None:
    """Run until cancelled: sleep ``interval`` and record into ``lag`` how much later than asked the loop
    woke us. A loop blocked by a long parse or a synchronous call shows up here first."""
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        await asyncio.sleep(interval)
        lag.observe(max(0.0, loop.time() - started - interval))
