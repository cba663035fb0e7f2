"""What this instance may see, checked on every object the API server sends into its watch caches.

The service asks the API server for its scope only: each cache lists and watches one namespace (or every
one), and the target caches only this shard's targets (a ``labelSelector``, :mod:`.sharding`). The server is
trusted to filter, but a server that does not — a bug in its replay of a resumed watch (the API emulator
had one: issue 37, item 12), an aggregated API, a proxy — would hand the service another namespace's or
another shard's objects, and the service would reconcile them: write their status, their scale, Events
about them. So every object is checked again as it enters a cache (its LIST pages and its watch events
alike): one outside the cache's namespace, or a target outside the shard, is left out as if it did not
exist (a cached object that leaves the scope leaves the cache, and its reconciler stops). The first such
object of each cache is logged as a warning, the rest at debug level: it is the server's fault, and one line
says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import structlog

from autoscaler.service.cluster.sharding import ShardingSettings

R = TypeVar("R")

log = structlog.get_logger("autoscaler.scope")


class Scope:
    """The objects one watch cache may hold: those of ``namespace`` (None: every namespace) and, for a
    target cache, those ``sharding`` serves."""

    __slots__ = ("_sharding", "cache", "left_out", "namespace")

    def __init__(self, cache: str, namespace: str | None, sharding: ShardingSettings | None = None) -> None:
        self.cache = cache  # the cache's name, for the log line
        self.namespace = namespace
        self._sharding = sharding
        self.left_out = 0  # objects left out so far

    def admits(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` is in this scope; if not, it is counted and the first one logged."""
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            return True  # no identity to judge by: the trimmer leaves it out anyway
        namespace = meta.get("namespace")
        labels = meta.get("labels")
        in_namespace = self.namespace is None or namespace == self.namespace
        if in_namespace and (
            self._sharding is None or self._sharding.serves(labels if isinstance(labels, Mapping) else None)
        ):
            return True
        self.left_out += 1
        (log.warning if self.left_out == 1 else log.debug)(
            "objects outside this instance's scope: left out",
            resource=self.cache,
            namespace=str(namespace or ""),
            name=str(meta.get("name") or ""),
            why="the API server sent what the request did not ask for (a bug of the server or of a proxy)",
        )
        return False


def scoped_trim(trim: Callable[[Mapping[str, Any]], R | None], scope: Scope) -> Callable[[Mapping[str, Any]], R | None]:
    """A watch cache's trimmer that first leaves out what is outside ``scope``."""

    def trim_in_scope(obj: Mapping[str, Any]) -> R | None:
        return trim(obj) if scope.admits(obj) else None

    return trim_in_scope


def scoped_retrim(
    retrim: Callable[[R, Mapping[str, Any]], R | None], scope: Scope
) -> Callable[[R, Mapping[str, Any]], R | None]:
    """A watch cache's ``retrim`` (a new version of a known object) that first checks ``scope``."""

    def retrim_in_scope(known: R, obj: Mapping[str, Any]) -> R | None:
        return retrim(known, obj) if scope.admits(obj) else None

    return retrim_in_scope
