"""Serving a watch over HTTP: newline-delimited ``{"type": ..., "object": ...}`` events.

Semantics copied from the API server's watch cache:

* ``resourceVersion`` unset or ``"0"``: synthetic ADDED events for the current objects, then
  changes; ``sendInitialEvents=true`` does the same and ends the initial batch with a BOOKMARK
  annotated ``k8s.io/initial-events-end: "true"``;
* ``resourceVersion=N``: changes after N (of the request's namespace and selection only, replayed
  from the event window as well as live), or, if N has left the event window, an HTTP 200
  stream with one ERROR event carrying a 410 Expired ``Status`` (errors found after the request
  was accepted are reported as watch events, not HTTP statuses);
* ``resourceVersion=N`` the store has not reached (after an etcd restore that sent the versions back):
  accepted, and silent — no event, no bookmark — until the store passes N; with
  ``sendInitialEvents=true``, a wait of up to 3 s for N, then an ERROR event carrying a 504 Timeout
  with a ``ResourceVersionTooLarge`` cause;
* ``allowWatchBookmarks=true``: a BOOKMARK every ``bookmark_interval`` seconds when idle, and
  one right before the server closes the watch at ``timeoutSeconds``;
* a watcher whose buffer overflows is closed, as a too-slow watcher is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from kube_emulator.errors import ApiError
from kube_emulator.faults import DropWatch
from kube_emulator.jsonutil import JsonObject, encode
from kube_emulator.operations import ApiOperations
from kube_emulator.reads import Served, wait_until_fresh
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import FieldSelector, LabelSelector
from kube_emulator.watch import Delivery, ObjectFilter, StoredObject, Subscription

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class WatchRequest:
    resource_type: ResourceType
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    accepts: ObjectFilter | None
    since: int | None
    """Replay changes after this resourceVersion; ``None`` starts from the current state."""
    timeout: float
    bookmarks: bool
    send_initial_events: bool
    transform: Callable[[Served], JsonObject] | None = None
    """Rewrites each event's object (into a Table row for ``kubectl get -w``)."""


@dataclass(frozen=True, slots=True)
class WatchSettings:
    bookmark_interval: float
    buffer_size: int


class _Stream:
    """Writes events to one response and enforces an injected drop."""

    def __init__(self, request: web.Request, response: web.StreamResponse, drop: DropWatch | None) -> None:
        self._request = request
        self._response = response
        self._drop = drop
        self._budget = drop.after_events if drop is not None else None
        self.dropped = False

    async def write(self, lines: list[bytes]) -> None:
        if self._budget is not None:
            lines, self._budget = lines[: self._budget], max(0, self._budget - len(lines))
        if lines:
            await self._response.write(b"".join(lines))
        if self._budget == 0:
            await self.drop()

    async def drop(self) -> None:
        self.dropped = True
        if self._drop is not None and self._drop.abrupt:
            transport = self._request.transport
            if transport is not None:
                transport.abort()
        else:
            await self._response.write_eof()


def _line(event_type: str, served: Served) -> bytes:
    if isinstance(served, StoredObject):
        return b'{"type":"' + event_type.encode() + b'","object":' + served.encoded() + b"}\n"
    return encode({"type": event_type, "object": served}) + b"\n"


def _delivery_line(
    ops: ApiOperations,
    resource_type: ResourceType,
    delivery: Delivery,
    transform: Callable[[Served], JsonObject] | None,
) -> bytes:
    served = ops.present(resource_type, delivery.object)
    if transform is not None:
        return _line(delivery.type, transform(served))
    if isinstance(served, StoredObject) and delivery.type == delivery.event.type:
        return delivery.event.line()
    return _line(delivery.type, served)


def _bookmark(resource_type: ResourceType, resource_version: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, object] = {"resourceVersion": str(resource_version)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    obj = {"kind": resource_type.kind, "apiVersion": resource_type.api_version, "metadata": meta}
    return encode({"type": "BOOKMARK", "object": obj}) + b"\n"


def error_line(problem: ApiError) -> bytes:
    return encode({"type": "ERROR", "object": problem.status()}) + b"\n"


async def start_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    return response


async def serve_expired(request: web.Request, problem: ApiError) -> web.StreamResponse:
    """A watch that fails once accepted (410 Expired, 504 Too large resource version): an HTTP 200
    stream with one ERROR event, as the API server's error watcher sends it."""
    response = await start_stream(request)
    await response.write(error_line(problem))
    await response.write_eof()
    return response


async def serve_watch(
    request: web.Request,
    ops: ApiOperations,
    watch: WatchRequest,
    settings: WatchSettings,
    drop: DropWatch | None = None,
) -> web.StreamResponse:
    resource_type = watch.resource_type
    resumes_from = watch.since if watch.since is not None and not watch.send_initial_events else 0
    if watch.send_initial_events and watch.since is not None and watch.since > ops.store.resource_version:
        try:  # a watch-list waits for its version (up to 3 s), as a read does
            await wait_until_fresh(ops.store, watch.since)
        except ApiError as problem:
            return await serve_expired(request, problem)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + watch.timeout
    drop_deadline = loop.time() + drop.after_seconds if drop and drop.after_seconds is not None else None
    response = await start_stream(request)
    stream = _Stream(request, response, drop)

    scope = watch.namespace if resource_type.namespaced else None
    # A plain watch from a version the store has not reached (an etcd restore sent the versions back) is
    # accepted and hears nothing until the store passes it, bookmarks included: the watch cache neither
    # waits nor errs for it (kubernetes/kubernetes#107457), and a bookmark older than the version asked
    # for would send the client back over changes it has not seen.
    subscription = Subscription(
        resource_type.storage_key, scope, watch.accepts, settings.buffer_size, after=resumes_from
    )
    initial: list[bytes] = []
    initial_rv = ops.store.resource_version
    # From here to store.subscribe() nothing awaits, so no write can slip between the
    # snapshot (or replay) and the subscription.
    try:
        if watch.since is None or watch.send_initial_events:
            listed = ops.list(resource_type, watch.namespace, watch.labels, watch.fields)
            transform = watch.transform
            initial = [_line("ADDED", transform(served) if transform else served) for served in listed.items]
        else:
            for event in ops.store.events_since(resource_type.storage_key, watch.since):
                subscription.offer(event)
    except ApiError as problem:
        await stream.write([error_line(problem)])
        if not stream.dropped:
            await response.write_eof()
        return response
    ops.store.subscribe(subscription)
    try:
        if watch.send_initial_events:
            initial.append(_bookmark(resource_type, initial_rv, initial_end=True))
        if initial or (drop is not None and drop.after_events == 0):
            await stream.write(initial)
        next_bookmark = loop.time() + settings.bookmark_interval
        while not stream.dropped:
            now = loop.time()
            if now >= deadline:
                if watch.bookmarks and ops.store.resource_version >= resumes_from:
                    await stream.write([_bookmark(resource_type, ops.store.resource_version)])
                break
            if drop_deadline is not None and now >= drop_deadline:
                await stream.drop()
                break
            wait = deadline - now
            if watch.bookmarks:
                wait = min(wait, next_bookmark - now)
            if drop_deadline is not None:
                wait = min(wait, drop_deadline - now)
            batch = await subscription.next_batch(wait)
            if batch:
                await stream.write(
                    [_delivery_line(ops, resource_type, delivery, watch.transform) for delivery in batch]
                )
            elif subscription.closed_reason is not None:
                break
            elif watch.bookmarks and loop.time() >= next_bookmark:
                # An empty buffer means every committed write has been delivered or filtered,
                # so the current resourceVersion is a safe place to resume from.
                if ops.store.resource_version >= resumes_from:
                    await stream.write([_bookmark(resource_type, ops.store.resource_version)])
                next_bookmark = loop.time() + settings.bookmark_interval
        if not stream.dropped:
            await response.write_eof()
    except ConnectionResetError:
        pass  # the client went away mid-write; nothing left to tell it
    finally:
        # Also reached when aiohttp cancels the handler because the client disconnected.
        ops.store.unsubscribe(subscription)
    return response
