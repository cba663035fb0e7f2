"""The scale of a target's workload, read and written: a Deployment's from the cache (and what this
service wrote, until the cache shows it), any other kind through its scale subresource."""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.kube.records import WorkloadRecord
from autoscaler.kube.scale import DEFAULT_API_VERSIONS, Scale, ScaleAccess, ScaleError
from autoscaler.kube.watch import Key
from autoscaler.service.cluster.targets import Target


class ClusterScales:
    """Scales of Deployments from the cache; any other kind through its scale subresource."""

    def __init__(self, deployments: Callable[[str, str], WorkloadRecord | None], access: ScaleAccess) -> None:
        self._deployments = deployments
        self._access = access
        # What we wrote, until the cache shows a newer version of the object (watch events lag a little).
        self._written: dict[Key, tuple[str, Scale]] = {}

    @staticmethod
    def _is_deployment(target: Target) -> bool:
        assert target.spec is not None
        ref = target.spec.scale_target_ref
        return ref.kind == "Deployment" and (ref.api_version or DEFAULT_API_VERSIONS["Deployment"]) == "apps/v1"

    async def read(self, target: Target) -> Scale:
        assert target.spec is not None
        ref = target.spec.scale_target_ref
        if not self._is_deployment(target):
            return await self._access.get(ref, target.namespace)
        record = self._deployments(target.namespace, ref.name)
        if record is None:
            raise ScaleError(f'deployments.apps "{ref.name}" not found')
        written = self._written.get((target.namespace, ref.name))
        if written is not None:
            if written[0] == record.resource_version:
                return written[1]
            del self._written[(target.namespace, ref.name)]
        return Scale(record.spec_replicas, record.status_replicas, record.selector, record.resource_version)

    async def write(self, target: Target, replicas: int, decided_on: Scale) -> None:
        assert target.spec is not None
        result = await self._access.set_replicas(target.spec.scale_target_ref, target.namespace, replicas, decided_on)
        if self._is_deployment(target):
            self._written[(target.namespace, target.spec.scale_target_ref.name)] = (decided_on.resource_version, result)
