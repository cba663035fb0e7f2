"""A ``coordination.k8s.io/v1`` Lease as leader election reads and writes it (client-go's ``LeaseLock``):
the record of who holds it, and the three requests that touch it.

Every write is a PUT carrying the resourceVersion that was read (or last written), so of two candidates
racing for an expired lease exactly one wins and the other gets 409. MicroTimes are written in UTC with
exactly six fractional digits, the format the API server parses.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from kubernetes_asyncio.client import ApiClient, CoordinationV1Api, V1Lease

from autoscaler.values.durations import parse_retry_after
from autoscaler.values.timestamps import rfc3339


def default_identity() -> str:
    """client-go's convention, ``<hostname>_<uuid>``: unique per process, even across restarts of a pod."""
    return f"{os.environ.get('HOSTNAME') or socket.gethostname()}_{uuid.uuid4()}"


def micro_time(moment: datetime) -> str:
    """A ``metav1.MicroTime``: RFC 3339 in UTC with exactly six fractional digits."""
    return rfc3339(moment.timestamp(), fraction=True)


def utc_now() -> datetime:
    return datetime.now(UTC)


def retry_after(exc: BaseException) -> float | None:
    """The seconds of an answer's ``Retry-After`` (429, or a 5xx that sends it), capped at a minute."""
    headers = getattr(exc, "headers", None)
    seconds = parse_retry_after(headers.get("Retry-After") if headers is not None and hasattr(headers, "get") else None)
    return min(60.0, seconds) if seconds is not None else None


def backoff(failures: int, retry_period: float, cap: float) -> float:
    """The pause before the next Lease request after ``failures`` consecutive errors: retryPeriod, doubled
    for each error after the first, capped at ``cap`` (never below retryPeriod)."""
    if failures <= 1:
        return retry_period
    return min(max(cap, retry_period), retry_period * 2.0 ** min(failures - 1, 30))


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The leader-election fields of a Lease's spec (client-go's ``LeaderElectionRecord``)."""

    holder: str  # "" when nobody holds it (released)
    duration: int  # leaseDurationSeconds
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int

    @classmethod
    def of(cls, lease: V1Lease) -> LeaseRecord:
        spec = lease.spec
        if spec is None:
            return cls("", 0, None, None, 0)
        return cls(
            spec.holder_identity or "",
            spec.lease_duration_seconds or 0,
            spec.acquire_time,
            spec.renew_time,
            spec.lease_transitions or 0,
        )

    def spec_fields(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "acquireTime": micro_time(self.acquire_time) if self.acquire_time else None,
            "renewTime": micro_time(self.renew_time) if self.renew_time else None,
            "leaseTransitions": self.transitions,
        }


class LeaseLock:
    """Reads, creates and replaces one Lease; every call is bounded by ``timeout`` seconds."""

    def __init__(self, api: ApiClient, namespace: str, name: str, timeout: float) -> None:
        self._leases = CoordinationV1Api(api)
        self._serialize = api.sanitize_for_serialization
        self.namespace = namespace
        self.name = name
        self.timeout = timeout

    async def read(self) -> V1Lease:
        """The Lease (``ApiException`` 404 when there is none)."""
        return await self._leases.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.timeout)

    async def write(self, base: V1Lease | None, record: LeaseRecord) -> V1Lease:
        """Create the Lease (``base`` None) or replace ``base`` under its resourceVersion (409 when someone
        wrote in between)."""
        # A plain dict body (the client serialises dicts as they are) so that the MicroTimes keep the exact
        # format the API server parses; a V1Lease would go through datetime.isoformat().
        body = cast(V1Lease, self._body(base, record))
        if base is None:
            return await self._leases.create_namespaced_lease(self.namespace, body, _request_timeout=self.timeout)
        return await self._leases.replace_namespaced_lease(
            self.name, self.namespace, body, _request_timeout=self.timeout
        )

    def _body(self, base: V1Lease | None, record: LeaseRecord) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        spec: dict[str, Any] = {}
        if base is not None:  # keep labels, annotations, resourceVersion and spec fields we do not manage
            metadata = dict(self._serialize(base.metadata) or {})
            spec = dict(self._serialize(base.spec) or {})
        spec.update(record.spec_fields())
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}
