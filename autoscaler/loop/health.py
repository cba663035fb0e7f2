"""How much the service's own event loop is held up: its lag, into
:class:`~autoscaler.service.telemetry.metrics.ServiceMetrics`' ``autoscaler_event_loop_lag_seconds``
(the cyclic collector's pauses, ``autoscaler_gc_pause_seconds``, are timed by :mod:`autoscaler.loop.collector`).
A loop held up long enough delays every sync and, without the elector's thread, the Lease. Apart from the
metrics' module because this runs (a task) where the rest only records.
"""

from __future__ import annotations

import asyncio

from prometheus_client import Histogram


async def monitor_event_loop_lag(lag: Histogram, interval: float = 0.5) -> None:
    """Run until cancelled: sleep ``interval`` and record into ``lag`` how much later than asked the loop
    woke us. A loop blocked by a long parse or a synchronous call shows up here first."""
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        await asyncio.sleep(interval)
        lag.observe(max(0.0, loop.time() - started - interval))
