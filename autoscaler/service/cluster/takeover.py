"""The read of every target's status when this instance begins to lead (the manager's takeover, D3).

A new leader starts each reconciler from the target's status as the API server has it *now*: its watch cache
may lag (a watch relisting after a partition, events still buffered after a pause), and its own memory of an
earlier term is older than what the leaders since wrote. One LIST (paged) per watched scope, retried with
backoff until it works: no target is reconciled from older state meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Mapping

import structlog

from autoscaler.kube.api import KubeApi, KubeError
from autoscaler.kube.paging import list_pages
from autoscaler.kube.watch import Key
from autoscaler.service.cluster.caches import trim_target
from autoscaler.service.cluster.scope import Scope
from autoscaler.service.cluster.sharding import ShardingSettings
from autoscaler.service.cluster.targets import TARGETS, Target

log = structlog.get_logger("autoscaler.manager")

TAKEOVER_READ_BACKOFF = (0.5, 10.0)  # seconds: first retry, cap
TAKEOVER_PAGE = 500  # client-go's page size; 100 made the takeover read of 10,000 targets 100 round trips


async def statuses_at_takeover(
    api: KubeApi, namespaces: tuple[str, ...], sharding: ShardingSettings, known: Mapping[Key, Target]
) -> dict[Key, Target]:
    """Every target of these namespaces (all: none listed) and this shard as the API server has it now,
    retried until the read works; what the server sends from outside them is left out, as the caches leave
    it out (:mod:`autoscaler.service.cluster.scope`). ``known``: the targets the caches hold, whose specs are not
    parsed again (only the status is used)."""
    delay = TAKEOVER_READ_BACKOFF[0]
    while True:
        try:
            fresh: dict[Key, Target] = {}
            for namespace in namespaces or (None,):
                fresh.update(await _list_targets(api, namespace, sharding, known))
            return fresh
        except KubeError as exc:
            log.warning("could not read the targets at takeover: retrying", error=str(exc), retry_in=round(delay, 2))
        await asyncio.sleep(delay * (1 + random.random()) / 2)
        delay = min(TAKEOVER_READ_BACKOFF[1], delay * 2)


async def _list_targets(
    api: KubeApi, namespace: str | None, sharding: ShardingSettings, known: Mapping[Key, Target]
) -> dict[Key, Target]:
    found: dict[Key, Target] = {}
    scope = Scope(
        f"{TARGETS.label} in {namespace} (takeover)" if namespace else f"{TARGETS.label} (takeover)",
        namespace,
        sharding,
    )
    pages = list_pages(
        api,
        TARGETS.collection(namespace),
        resource=TARGETS.label,
        page_size=TAKEOVER_PAGE,
        label_selector=sharding.label_selector,
    )
    async with contextlib.aclosing(pages):
        async for body in pages:
            for obj in body.get("items") or []:
                if not isinstance(obj, Mapping) or not scope.admits(obj):
                    continue
                meta = obj.get("metadata")
                key = (str(meta.get("namespace") or ""), str(meta.get("name"))) if isinstance(meta, Mapping) else None
                # Only the status is used: a spec at the cached generation is not parsed again.
                target = trim_target(obj, known.get(key) if key is not None else None)
                if target is not None:
                    found[target.key] = target
    return found
