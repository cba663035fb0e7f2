"""A real Prometheus that has already scraped its exporter, for each test module that asks for one.

A Prometheus answers ``/-/ready`` within a fraction of a second of its start, but scrapes nothing for about 5 s:
its discovery manager hands the scrape targets over on a 5 s tick (Prometheus 2.x, not configurable). Every
module of the chaos and end-to-end suites waited those 5 s for its first sample, some 40 times a run. So each
xdist worker keeps one spare: an exporter and a Prometheus scraping it, started when the previous one is handed
out. A module takes the spare, already scraped while the module before it ran, and owns it as before: it is
the module's own exporter and Prometheus (nobody else's series, its own faults and restarts), stopped when the
module ends.

The spare's TSDB holds the seconds (or minutes) it waited in: ``queue_depth{queue="jobs"} 0`` and ``up``, as a
module's Prometheus holds them from the module's start on.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget, find_binary

__all__ = ["FIRST_SERIES", "Scraped", "WarmPrometheus"]

# The series every such Prometheus has from its first scrape on (the modules wait for it).
FIRST_SERIES = ("queue_depth", {"queue": "jobs"})


@dataclass
class Scraped:
    """An exporter and the Prometheus scraping it every second (None without the prometheus binary: the module's
    ``prometheus`` fixture then skips, or fails in CI, through its guard)."""

    exporter: MetricsExporter
    prometheus: PrometheusSandbox | None

    def close(self) -> None:
        try:
            if self.prometheus is not None:
                self.prometheus.close()
        finally:
            self.exporter.stop()


class WarmPrometheus:
    """One worker's spare :class:`Scraped` (see the module)."""

    def __init__(self, scrape_interval: float = 1.0) -> None:
        self.scrape_interval = scrape_interval
        self._spare: Scraped | None = None

    def take(self) -> Scraped:
        """The spare (or a new one, the first time), and a new spare warming up for the next module."""
        taken = self._spare if self._spare is not None else self._start()
        self._spare = None
        try:
            self._spare = self._start()
        except BaseException:
            taken.close()
            raise
        return taken

    def close(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()

    def _start(self) -> Scraped:
        exporter = MetricsExporter().start()
        name, labels = FIRST_SERIES
        exporter.set(name, labels, 0)
        if find_binary("prometheus") is None:
            return Scraped(exporter, None)
        sandbox = PrometheusSandbox(
            scrape_targets=[ScrapeTarget(exporter.address)], scrape_interval=self.scrape_interval
        )
        try:
            sandbox.start()
        except BaseException:
            sandbox.close()
            exporter.stop()
            raise
        return Scraped(exporter, sandbox)
