"""Synthetic Prometheus history for promtool backfill: OpenMetrics families built sample by sample,
with helpers for the kube-state-metrics series a backtest reads (tests, the docs' example plot)."""

from __future__ import annotations

from collections.abc import Iterable

Labels = tuple[tuple[str, str], ...]
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


class OpenMetricsHistory:
    """Families → series → samples; :meth:`text` writes them as promtool wants them (each family's
    samples together, each series' samples in time order, ``# EOF`` last)."""

    def __init__(self) -> None:
        self.families: dict[str, dict[Labels, list[tuple[float, str]]]] = {}

    def add(self, family: str, labels: dict[str, str], at: float, value: str) -> None:
        key = tuple(sorted(labels.items()))
        self.families.setdefault(family, {}).setdefault(key, []).append((at, value))

    def text(self) -> str:
        lines = [line for family, series in self.families.items() for line in _family_lines(family, series)]
        return "\n".join([*lines, "# EOF"]) + "\n"

    # -- kube-state-metrics --------------------------------------------------------------------

    def replica_set(self, namespace: str, name: str, deployment: str, at: float) -> None:
        self.add(
            "kube_replicaset_owner",
            {
                "namespace": namespace,
                "replicaset": name,
                "owner_kind": "Deployment",
                "owner_name": deployment,
                "owner_is_controller": "true",
            },
            at,
            "1",
        )

    def pod(
        self,
        namespace: str,
        pod: str,
        replica_set: str,
        at: float,
        *,
        phase: str | None = "Running",
        ready: bool | None = True,
        started: float | None = None,
        deleting: bool = False,
        requests: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """One pod at one time: ownership, and each fact given (None leaves its series out).
        ``requests``: container → resource → value in kube-state-metrics' units (cores, bytes)."""
        labels = {"namespace": namespace, "pod": pod}
        self.add(
            "kube_pod_owner",
            {**labels, "owner_kind": "ReplicaSet", "owner_name": replica_set, "owner_is_controller": "true"},
            at,
            "1",
        )
        if phase is not None:
            for name in PHASES:
                self.add("kube_pod_status_phase", {**labels, "phase": name}, at, "1" if name == phase else "0")
        if ready is not None:
            for condition in ("true", "false", "unknown"):
                self.add(
                    "kube_pod_status_ready",
                    {**labels, "condition": condition},
                    at,
                    "1" if condition == str(ready).lower() else "0",
                )
        if started is not None:
            self.add("kube_pod_start_time", labels, at, f"{started:.0f}")
        if deleting:
            self.add("kube_pod_deletion_timestamp", labels, at, f"{at:.0f}")
        units = {"cpu": "core", "memory": "byte"}
        for container, resources in (requests or {}).items():
            for resource, value in resources.items():
                self.add(
                    "kube_pod_container_resource_requests",
                    {**labels, "container": container, "resource": resource, "unit": units.get(resource, "integer")},
                    at,
                    value,
                )

    def deployment(self, namespace: str, name: str, at: float, replicas: int) -> None:
        for family in ("kube_deployment_status_replicas", "kube_deployment_spec_replicas"):
            self.add(family, {"namespace": namespace, "deployment": name}, at, str(replicas))


def _family_lines(family: str, series: dict[Labels, list[tuple[float, str]]]) -> Iterable[str]:
    yield f"# TYPE {family} gauge"
    for labels, samples in sorted(series.items()):
        text = ",".join(f'{k}="{v}"' for k, v in labels)
        for at, value in samples:
            yield f"{family}{{{text}}} {value} {_time(at)}"


def _time(at: float) -> str:
    return f"{at:.0f}" if float(at).is_integer() else f"{at:.3f}"
