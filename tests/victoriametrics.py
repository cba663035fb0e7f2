"""A private VictoriaMetrics single node (Debian's ``victoria-metrics``) on a free loopback port: the second
backend the Prometheus layer is tested against. It scrapes like Prometheus (``-promscrape.config`` takes
Prometheus' scrape config) and serves Prometheus' query API, so it stands in for
:class:`~autoscaler_sandbox.PrometheusSandbox` everywhere a test only scrapes and queries: same lifecycle
(start, stop, restart, pause), same ``query``/``wait_for``.

What it does not do: :meth:`backfill` (promtool writes Prometheus' TSDB blocks; VictoriaMetrics imports over
HTTP instead, and the backfilled tests pin Prometheus' own arithmetic at fixed times).

Flags chosen for tests, and what a production VictoriaMetrics does instead:

* ``-search.latencyOffset=1s`` (the least it takes): by default an instant query for "now" is evaluated 30 s in
  the past (the answer's timestamps are shifted back to "now"), so a change shows 30 s late;
* ``-search.disableCache``: no rollup cache, so a test sees each new sample at once.

:meth:`~VictoriaMetricsSandbox.wait_for` asks for a flush (``/internal/force_flush``) before each poll: a fresh
server makes its first series searchable only ~10 s after their first scrape (once its in-memory parts are
flushed), and every module waited that long for them. The data it waits for is the data that would have
shown anyway, sooner; what a test's service reads after that is served as VictoriaMetrics serves it.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from autoscaler_sandbox import PrometheusSandbox, SandboxError, find_binary

BINARY = "victoria-metrics"
PACKAGE = "victoria-metrics"


class VictoriaMetricsSandbox(PrometheusSandbox):
    """``PrometheusSandbox``'s interface over ``/usr/bin/victoria-metrics``."""

    kind = "victoriametrics"

    def __init__(self, **options: Any) -> None:
        options.setdefault("binary", find_binary(BINARY))
        options.setdefault("log_level", "WARN")
        super().__init__(**options)
        self.log_file = self.work_dir / "victoria-metrics.log"
        self.config_file = self.work_dir / "scrape.yml"

    def start(self) -> VictoriaMetricsSandbox:
        if self.binary is None:
            raise SandboxError(f"the {BINARY} binary is not installed (Debian package '{PACKAGE}')")
        super().start()
        return self

    def _spawn(self) -> None:
        assert self.port is not None
        args = [
            f"-httpListenAddr={self.host}:{self.port}",
            f"-storageDataPath={self.data_dir}",
            "-retentionPeriod=100y",
            f"-loggerLevel={self.log_level}",
            "-search.latencyOffset=1s",
            "-search.disableCache",
            *self.extra_args,
        ]
        if self.scrape_targets:
            args.append(f"-promscrape.config={self.config_file}")
        self._launch(args)

    def write_config(self) -> None:
        interval = f"{max(1, round(self.scrape_interval * 1000))}ms"
        config: dict[str, Any] = {
            "global": {"scrape_interval": interval, "scrape_timeout": interval},
            "scrape_configs": [
                {
                    "job_name": target.job,
                    "honor_labels": target.honor_labels,
                    "metrics_path": target.metrics_path,
                    "static_configs": [{"targets": [target.address]}],
                }
                for target in self.scrape_targets
            ],
        }
        self.config_file.write_text(yaml.safe_dump(config))

    def wait_for(self, promql: str, predicate: Callable[[list[Any]], bool] = bool, timeout: float = 30.0) -> list[Any]:
        """Poll ``promql`` until ``predicate(result)`` holds, flushing before each poll (see the module)."""
        deadline = time.monotonic() + timeout
        while True:
            self.force_flush()
            try:
                return super().wait_for(promql, predicate, timeout=min(0.5, max(deadline - time.monotonic(), 0.01)))
            except SandboxError as failed:
                if time.monotonic() >= deadline:
                    last = str(failed).partition("(last: ")[2]
                    message = f"{promql!r} did not produce the expected result within {timeout:g}s (last: {last}"
                    raise SandboxError(message) from None

    def force_flush(self) -> None:
        """Make the samples received so far searchable now (best effort: a paused or stopped server is let be)."""
        try:
            with urllib.request.urlopen(self.url + "/internal/force_flush", timeout=2.0) as response:
                response.read()
        except (urllib.error.URLError, OSError):
            pass

    def backfill(self, openmetrics: str | Path) -> None:
        raise SandboxError("VictoriaMetrics is not backfilled with promtool (it imports over HTTP)")
