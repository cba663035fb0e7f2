"""Small builders that keep engine tests readable."""

from __future__ import annotations

from autoscaler.core.observation import ConditionStatus, ContainerInfo, PodInfo, PodPhase, PodUsage, Sample

FAR_PAST = -1e10


def pod(
    name: str,
    *,
    cpu_request: int | None = 1000,
    phase: PodPhase = PodPhase.RUNNING,
    ready: ConditionStatus | None = ConditionStatus.TRUE,
    ready_since: float = FAR_PAST,
    started_at: float | None = FAR_PAST,
    deleting: bool = False,
    containers: tuple[ContainerInfo, ...] | None = None,
) -> PodInfo:
    if containers is None:
        requests = {} if cpu_request is None else {"cpu": cpu_request}
        containers = (ContainerInfo("app", requests),)
    return PodInfo(name, phase, ready, ready_since, started_at, deleting, containers)


def samples(values: dict[str, int], at: float = 0.0, window: float = 60.0) -> dict[str, Sample]:
    return {name: Sample(value, at, window) for name, value in values.items()}


def usage(values: dict[str, int], at: float = 0.0, window: float = 60.0) -> dict[str, PodUsage]:
    return {name: PodUsage({"app": value}, at, window) for name, value in values.items()}
