"""The ``scale`` subresource of any workload: found through discovery, read, and written safely.

Deployments come from the watch cache (no request per sync); any other kind with a ``scale``
subresource (StatefulSets, ReplicaSets, custom resources) is resolved once through discovery and read
with one GET per sync, as upstream does. Writes are merge patches of ``spec.replicas`` that carry the
resourceVersion the decision was made on, so a concurrent change answers 409; the write is then retried
on fresh state — unless the fresh state shows someone else changed the replica count, in which case
the decision is stale and the next sync decides again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from autoscaler.core.spec import CrossVersionObjectReference
from autoscaler.kube.api import KubeApi, KubeError, ResourcePath

# Kinds whose group the API server would tell us anyway; an empty apiVersion means these.
DEFAULT_API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "ReplicationController": "v1",
}
CONFLICT_RETRIES = 5  # client-go's retry.DefaultRetry steps


class ScaleError(Exception):
    """The scale cannot be read or written (the message is meant for the AbleToScale condition)."""


class StaleScale(ScaleError):
    """The replica count changed under us: the decision was made on old state."""


@dataclass(slots=True, init=False, unsafe_hash=True)
class Scale:
    spec_replicas: Final[int]
    status_replicas: Final[int]
    selector: Final[str]
    resource_version: Final[str]

    def __init__(self, spec_replicas: int, status_replicas: int, selector: str, resource_version: str) -> None:
        self.spec_replicas = spec_replicas
        self.status_replicas = status_replicas
        self.selector = selector
        self.resource_version = resource_version


def parse_scale(body: Any) -> Scale:
    spec = (body or {}).get("spec") or {}
    status = (body or {}).get("status") or {}
    meta = (body or {}).get("metadata") or {}
    return Scale(
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        str(status.get("selector") or ""),
        str(meta.get("resourceVersion") or ""),
    )


class ScaleAccess:
    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self._paths: dict[tuple[str, str], ResourcePath] = {}

    async def resolve(self, ref: CrossVersionObjectReference) -> ResourcePath:
        """The resource path of ``ref``'s kind, which must have a ``scale`` subresource."""
        api_version = ref.api_version or DEFAULT_API_VERSIONS.get(ref.kind, "")
        if not api_version:
            raise ScaleError(f"scaleTargetRef.apiVersion is required for kind {ref.kind}")
        cache_key = (api_version, ref.kind)
        if cache_key in self._paths:
            return self._paths[cache_key]
        group, _, version = api_version.rpartition("/")
        prefix = f"/apis/{api_version}" if group else f"/api/{version}"
        try:
            listing = await self.api.get(prefix, resource="discovery")
        except KubeError as exc:
            raise ScaleError(f"no API group/version {api_version} on this server: {exc.message}") from exc
        resources = listing.get("resources") or []
        names = {r.get("name") for r in resources}
        for entry in resources:
            name = str(entry.get("name") or "")
            if entry.get("kind") == ref.kind and "/" not in name:
                if f"{name}/scale" not in names:
                    raise ScaleError(f"{ref.kind} ({api_version}) has no scale subresource")
                path = ResourcePath(group, version, name, bool(entry.get("namespaced", True)))
                self._paths[cache_key] = path
                return path
        raise ScaleError(f"no kind {ref.kind} in {api_version}")

    async def get(self, ref: CrossVersionObjectReference, namespace: str) -> Scale:
        path = await self.resolve(ref)
        try:
            body = await self.api.get(path.item(namespace, ref.name, "scale"), resource=f"{path.label}/scale")
        except KubeError as exc:
            raise ScaleError(exc.message if exc.status else str(exc)) from exc
        return parse_scale(body)

    async def set_replicas(
        self, ref: CrossVersionObjectReference, namespace: str, replicas: int, decided_on: Scale
    ) -> Scale:
        """Write ``spec.replicas``; retry 409s on fresh state (see the module docstring)."""
        path = await self.resolve(ref)
        url = path.item(namespace, ref.name, "scale")
        version = decided_on.resource_version
        for _ in range(CONFLICT_RETRIES):
            body: dict[str, Any] = {"spec": {"replicas": replicas}}
            if version:
                body["metadata"] = {"resourceVersion": version}
            try:
                return parse_scale(await self.api.merge_patch(url, body, resource=f"{path.label}/scale"))
            except KubeError as exc:
                if not exc.conflict:
                    raise ScaleError(exc.message if exc.status else str(exc)) from exc
            fresh = await self.get(ref, namespace)
            if fresh.spec_replicas != decided_on.spec_replicas:
                raise StaleScale(
                    f"the replica count changed from {decided_on.spec_replicas} to "
                    f"{fresh.spec_replicas} while deciding; deciding again at the next sync"
                )
            version = fresh.resource_version
        raise ScaleError(f"Operation cannot be fulfilled: {CONFLICT_RETRIES} conflicts in a row")
