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
"""

from __future__ import annotations

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

    def backfill(self, openmetrics: str | Path) -> None:
        raise SandboxError("VictoriaMetrics is not backfilled with promtool (it imports over HTTP)")
