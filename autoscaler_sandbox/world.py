"""The demo's world: the load curve on demo time, the workload's pods as the emulator has them, and
the usage they report. Both metrics sources (the synthetic Prometheus API, or a real Prometheus
scraping an exporter) and the timeline read it, so they all tell the same story."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autoscaler_sandbox.loadcurve import LoadCurve
from autoscaler_sandbox.promapi import Sample, UnknownQuery
from autoscaler_sandbox.timescale import TimeScale
from autoscaler_sandbox.traffic import PodState, TrafficModel

CPU_SERIES = "container_cpu_usage_seconds_total"
REQUESTS_SERIES = "ingress_http_requests_total"


@dataclass(frozen=True, slots=True)
class Workload:
    namespace: str
    name: str
    container: str
    cpu_request: float  # cores per pod


class DemoWorld:
    def __init__(
        self,
        curve: LoadCurve,
        scale: TimeScale,
        workload: Workload,
        pods: Callable[[], list[PodState]],
        model: TrafficModel | None = None,
    ) -> None:
        self.curve = curve
        self.scale = scale
        self.workload = workload
        self.pods = pods
        self.model = model or TrafficModel()

    def load_at(self, unix_time: float) -> float:
        return self.curve.load(self.scale.at(unix_time))

    def cpu(self, load: float) -> dict[str, float]:
        """Cores per running pod of the workload at this load, as things stand now."""
        return self.model.cpu(load, self.pods())

    def utilization(self, load: float) -> float | None:
        """Mean CPU utilization of the ready (serving) pods, in percent of their request."""
        pods = self.pods()
        usage = self.model.cpu(load, pods)
        ready = [usage[pod.name] for pod in pods if pod.ready]
        if not ready:
            return None
        return 100.0 * sum(ready) / (len(ready) * self.workload.cpu_request)

    def cpu_labels(self, pod: str) -> dict[str, str]:
        return {"namespace": self.workload.namespace, "pod": pod, "container": self.workload.container}

    def requests_labels(self) -> dict[str, str]:
        return {"namespace": self.workload.namespace, "service": self.workload.name}

    def answer(self, promql: str, at: float) -> Sequence[Sample]:
        """The synthetic Prometheus' answer: the demo target's two queries, evaluated at ``at`` on
        the curve (an ideal Prometheus: no scrape delay, no rate window lag)."""
        load = self.load_at(at)
        if CPU_SERIES in promql:
            return [Sample(self.cpu_labels(pod), cores) for pod, cores in self.cpu(load).items()]
        if REQUESTS_SERIES in promql:
            return [Sample({}, load)]  # sum(...) has no labels left
        raise UnknownQuery(
            f"the demo's metrics source answers queries over {CPU_SERIES} and {REQUESTS_SERIES} only, not {promql!r}"
        )
