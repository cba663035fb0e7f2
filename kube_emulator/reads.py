"""What every verb reads through: objects as an endpoint serves them, GET, and LIST with its selectors
and pages.

:class:`ObjectReads` is the read half of :class:`~kube_emulator.operations.ApiOperations` (which adds the
writes on top of it): the watch server (:mod:`kube_emulator.streaming`) filters with its
:meth:`~ObjectReads.matcher`, and every write reads the object it changes through
:meth:`~ObjectReads._existing`, so "not found" and "as served" mean the same thing everywhere.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import json
from collections.abc import Mapping
from dataclasses import dataclass

from kube_emulator import errors
from kube_emulator.clock import Clock
from kube_emulator.jsonutil import JsonObject, clone
from kube_emulator.resources import ResourceRegistry, ResourceType
from kube_emulator.selectors import EVERYTHING, FieldSelector, LabelSelector, field_value
from kube_emulator.store import ObjectStore
from kube_emulator.watch import ObjectFilter, StoredObject

Served = StoredObject | JsonObject
"""An object as an endpoint serves it: the stored version itself when no rewriting is needed
(so its cached encoding is reused), else a converted dict."""

_ALWAYS_SELECTABLE = frozenset({"metadata.name", "metadata.namespace"})

FRESHNESS_WAIT = 3.0
"""Seconds a read or watch-list waits for a resourceVersion the store has not reached (the watch cache's
``blockTimeout``), before it is answered 504 Too large resource version."""
_FRESHNESS_POLL = 0.02


def as_dict(served: Served) -> JsonObject:
    """A private copy of a served object."""
    return clone(served.obj if isinstance(served, StoredObject) else served)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[Served]
    resource_version: int
    continue_token: str | None = None
    remaining: int | None = None


class ObjectReads:
    def __init__(self, store: ObjectStore, registry: ResourceRegistry, clock: Clock) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock

    # --- presentation ----------------------------------------------------------------------------

    def present(self, resource_type: ResourceType, stored: StoredObject) -> Served:
        if resource_type.converter is not None:
            return resource_type.converter.from_storage(stored.obj)
        if stored.obj.get("apiVersion") != resource_type.api_version:
            return {**stored.obj, "apiVersion": resource_type.api_version}
        return stored

    def _present_dict(self, resource_type: ResourceType, obj: JsonObject) -> JsonObject:
        if resource_type.converter is not None:
            return resource_type.converter.from_storage(obj)
        return {**obj, "apiVersion": resource_type.api_version}

    # --- reads -----------------------------------------------------------------------------------

    def get(self, resource_type: ResourceType, namespace: str, name: str) -> Served:
        return self.present(resource_type, self._existing(resource_type, namespace, name))

    def _existing(self, resource_type: ResourceType, namespace: str, name: str) -> StoredObject:
        stored = self.store.get(resource_type.storage_key, namespace if resource_type.namespaced else "", name)
        if stored is None:
            raise errors.not_found(resource_type.plural, resource_type.group, name)
        return stored

    def matcher(self, resource_type: ResourceType, labels: LabelSelector, fields: FieldSelector) -> ObjectFilter | None:
        """A predicate for list/watch filtering, or ``None`` when everything matches.

        Field selectors are evaluated on the served representation, so ``regarding.name``
        works on events.k8s.io Events stored as core/v1.
        """
        unsupported = fields.fields() - _ALWAYS_SELECTABLE - resource_type.selectable_fields
        if unsupported:
            raise errors.bad_request(f"field label not supported: {sorted(unsupported)[0]}")
        if labels.is_empty() and not fields.requirements:
            return None
        converter = resource_type.converter

        def accepts(stored: StoredObject) -> bool:
            if not labels.matches(stored.labels):
                return False
            if not fields.requirements:
                return True
            obj = converter.from_storage(stored.obj) if converter else stored.obj
            return fields.matches(lambda field: field_value(obj, field))

        return accepts

    def list(
        self,
        resource_type: ResourceType,
        namespace: str | None,
        labels: LabelSelector = EVERYTHING,
        fields: FieldSelector | None = None,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListResult:
        fields = fields or FieldSelector()
        accepts = self.matcher(resource_type, labels, fields)
        resource_version = self.store.resource_version
        scope = namespace if resource_type.namespaced else None
        pinned_name = fields.exact("metadata.name")
        start_after: tuple[str, str] | None = None
        if continue_token:
            resource_version, start_after = _decode_continue(continue_token)
        following: int | None = None  # how many objects follow start_after, when only a page was taken
        if pinned_name is not None and (scope is not None or not resource_type.namespaced):
            # A single-object list (how clients watch one object) needs no scan.
            found = self.store.get(resource_type.storage_key, scope or "", pinned_name)
            candidates = [found] if found else []
        elif limit and scope is None and labels.is_empty() and not fields.requirements:
            # A page of everything (how an informer lists): only the page's objects, already after start_after.
            candidates, following = self.store.page(resource_type.storage_key, start_after, limit)
        else:
            candidates = self.store.list(resource_type.storage_key, scope, labels)
        if accepts is not None and fields.requirements:
            candidates = [stored for stored in candidates if accepts(stored)]
        if start_after is not None and following is None:
            # candidates are in (namespace, name) order: the page starts right after the last one sent
            first = bisect.bisect_right(candidates, start_after, key=lambda stored: (stored.namespace, stored.name))
            candidates = candidates[first:]
        total = len(candidates) if following is None else following
        token, remaining = None, None
        if limit and total > limit:
            remaining = total - limit
            candidates = candidates[:limit]
            last = candidates[-1]
            token = _encode_continue(resource_version, (last.namespace, last.name))
        return ListResult(
            [self.present(resource_type, stored) for stored in candidates], resource_version, token, remaining
        )


# --- continue tokens ----------------------------------------------------------------------------------


def _encode_continue(resource_version: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"rv": resource_version, "start": list(after)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = decoded["start"]
        return int(decoded["rv"]), (str(namespace), str(name))
    except (ValueError, KeyError, TypeError, binascii.Error) as problem:
        raise errors.bad_request(f"continue key is not valid: {problem}") from problem


# --- resourceVersions the store has not reached ---------------------------------------------------------


async def wait_until_fresh(store: ObjectStore, wanted: int, *, seconds: float = FRESHNESS_WAIT) -> None:
    """Return once the store has reached resourceVersion ``wanted``; 504 Too large resource version
    (retry after 1 s) if it has not within ``seconds``: what the watch cache answers a GET or LIST "not
    older than" a version it has not seen, and a watch-list (``sendInitialEvents=true``) from one. A
    version from before an etcd restore that went back is such a version until the store passes it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while store.resource_version < wanted:
        left = deadline - loop.time()
        if left <= 0:
            raise errors.too_large_resource_version(wanted, store.resource_version, 1)
        await asyncio.sleep(min(_FRESHNESS_POLL, left))


async def read_fresh_enough(store: ObjectStore, query: Mapping[str, str]) -> None:
    """For a GET or LIST: wait as :func:`wait_until_fresh` does when it asks for a resourceVersion (other
    than "0", any, and not ``Exact``, which only the current one can answer here) the store has not reached."""
    requested = query.get("resourceVersion") or ""
    if requested in ("", "0") or query.get("resourceVersionMatch") == "Exact" or query.get("continue"):
        return
    try:
        wanted = int(requested)
    except ValueError:
        raise errors.bad_request(f"invalid resource version: {requested!r}") from None
    if wanted > store.resource_version:
        await wait_until_fresh(store, wanted)
