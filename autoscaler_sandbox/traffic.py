"""How the demo workload turns load into the usage Prometheus would report for its pods.

A load balancer spreads the requests over the *ready* pods only; each request costs a little CPU on
top of an idle baseline. A pod that runs but is not ready yet gets no traffic but burns start-up CPU
(a JIT warming up): the reason upstream sets such pods' CPU aside. Pending pods have no containers
running, so no series at all, as with cAdvisor.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PodState:
    name: str
    running: bool
    ready: bool


@dataclass(frozen=True, slots=True)
class TrafficModel:
    cpu_per_request: float = 0.0025  # cores per request per second
    idle_cpu: float = 0.025  # cores, a ready pod without traffic
    warmup_cpu: float = 0.2  # cores, a running pod that is not ready yet

    def cpu(self, load: float, pods: list[PodState]) -> dict[str, float]:
        """Cores per running pod at this load."""
        ready = sum(1 for pod in pods if pod.ready)
        share = load / ready if ready else 0.0
        return {
            pod.name: (self.idle_cpu + share * self.cpu_per_request) if pod.ready else self.warmup_cpu
            for pod in pods
            if pod.running
        }
