"""A scrape target whose series a test (or demo) sets at will, served by aiohttp in its own thread.

The server runs on a private event loop in a background thread, so it keeps answering scrapes
whatever the caller's event loop is doing (pytest gives each test its own loop).

* gauges: ``exporter.set("container_memory_working_set_bytes", {"pod": "a"}, "1048576")``;
  values may be text (``"0.3"``, ``"NaN"``, ``"+Inf"``) or numbers;
* counters growing at a fixed rate: ``exporter.set_rate("container_cpu_usage_seconds_total",
  labels, 0.25)``. They carry explicit sample timestamps, so Prometheus' ``rate()`` sees exact
  slopes (series with explicit timestamps get no staleness markers, so use gauges to test staleness);
* ``remove``/``clear`` make series disappear (Prometheus then marks them stale);
* ``change_rates`` steps counters to a new rate at one instant, each kept continuous there (a benchmark's
  step of load); ``renders`` holds the wall-clock times of the latest scrapes (their samples' timestamps).
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping

from aiohttp import web

LabelKey = tuple[tuple[str, str], ...]
RENDERS_KEPT = 10_000  # a 1 s scrape's last ~3 hours


def continuous_origin(per_second: float, origin: float, new_per_second: float, at: float) -> float:
    """The origin that makes ``new_per_second × (t - origin')`` equal ``per_second × (t - origin)`` at
    ``t = at``: the counter changes its slope there without a jump (keeping the old origin would multiply its
    whole value since then, a burst ``rate()`` reads as hours of extra load)."""
    return at - per_second * (at - origin) / new_per_second


def _escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _format_value(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class MetricsExporter:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port: int | None = None
        self.scrapes = 0
        # When each of the latest renders happened (wall clock, as their samples' timestamps): which scrape first
        # carried a change made at a known instant.
        self.renders: deque[float] = deque(maxlen=RENDERS_KEPT)
        # Each series with its text before the value (name and labels), made once: rendering 200,000
        # series' labels at every scrape held the interpreter (this thread's) for a second and more.
        self._gauges: dict[str, dict[LabelKey, tuple[str, str]]] = {}  # value, series text
        self._rates: dict[str, dict[LabelKey, tuple[float, float, str]]] = {}  # per second, origin, series text
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._clock = time.time

    @property
    def address(self) -> str:
        if self.port is None:
            raise RuntimeError("exporter not started")
        return f"{self.host}:{self.port}"

    # -- series ---------------------------------------------------------------------------------

    def set(self, name: str, labels: Mapping[str, str], value: float | str) -> None:
        with self._lock:
            key = tuple(sorted(labels.items()))
            self._gauges.setdefault(name, {})[key] = (_format_value(value), name + _labels_text(key))

    def set_rate(self, name: str, labels: Mapping[str, str], per_second: float, *, origin: float | None = None) -> None:
        """A counter equal to ``per_second × (t - origin)`` at scrape time t (default origin: an
        hour ago, so the counter is never near zero)."""
        start = origin if origin is not None else self._clock() - 3600.0
        with self._lock:
            key = tuple(sorted(labels.items()))
            self._rates.setdefault(name, {})[key] = (per_second, start, name + _labels_text(key))

    def change_rates(self, name: str, series: Iterable[Mapping[str, str]], per_second: float) -> float:
        """Counters ``series`` of ``name`` (each already set by :meth:`set_rate`) grow at ``per_second`` from
        now on, each continuous now (:func:`continuous_origin`); all at once, so that every scrape carries
        either none or all of the change. Returns the instant (wall clock) of the change."""
        keys = [tuple(sorted(labels.items())) for labels in series]
        with self._lock:
            now = int(self._clock() * 1000) / 1000  # on the samples' millisecond timestamps (render's)
            counters = self._rates[name]
            for key in keys:
                old, origin, text = counters[key]
                counters[key] = (per_second, continuous_origin(old, origin, per_second, now), text)
        return now

    def remove(self, name: str, labels: Mapping[str, str]) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._gauges.get(name, {}).pop(key, None)
            self._rates.get(name, {}).pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._gauges.clear()
            self._rates.clear()

    def render(self) -> str:
        lines: list[str] = []
        with self._lock:
            # The clock read under the lock: a render either precedes a change_rates or carries it, in time order.
            millis = int(self._clock() * 1000)
            self.renders.append(millis / 1000)
            for _, series in sorted(self._gauges.items()):
                for value, text in series.values():
                    lines.append(f"{text} {value}")
            for name, counters in sorted(self._rates.items()):
                lines.append(f"# TYPE {name} counter")
                for per_second, origin, text in counters.values():
                    counter = per_second * (millis / 1000 - origin)
                    lines.append(f"{text} {counter!r} {millis}")
        return "\n".join(lines) + "\n"

    # -- server ---------------------------------------------------------------------------------

    def start(self) -> MetricsExporter:
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, args=(sock,), name="metrics-exporter", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the exporter did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> MetricsExporter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application()
        app.router.add_get("/metrics", self._handle)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.SockSite(runner, sock).start())
        self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    async def _handle(self, request: web.Request) -> web.Response:
        self.scrapes += 1
        return web.Response(
            text=self.render(),
            content_type="text/plain",
            charset="utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )


def _labels_text(key: LabelKey) -> str:
    if not key:
        return ""
    return "{" + ",".join(f'{k}="{_escape_label_value(v)}"' for k, v in key) + "}"
