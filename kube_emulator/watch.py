"""Watch plumbing independent of HTTP: change events, and subscriptions that buffer them.

The store fans every committed change out to subscriptions synchronously, inside the same
event-loop step as the write. That makes "subscribe, then replay history or snapshot" atomic
with respect to writes, and means a subscription whose buffer is empty has seen every write
committed so far, which is exactly what a BOOKMARK promises.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from kube_emulator.jsonutil import JsonObject, encode

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(slots=True, eq=False)
class StoredObject:
    """One committed version of an object. ``obj`` is never mutated after commit."""

    obj: JsonObject
    resource_version: int
    _encoded: bytes | None = None

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def labels(self) -> dict[str, str]:
        labels = self.obj["metadata"].get("labels")
        return labels if isinstance(labels, dict) else {}

    def encoded(self) -> bytes:
        # Encoded once and shared by every GET, LIST and watcher that serves this version.
        if self._encoded is None:
            self._encoded = encode(self.obj)
        return self._encoded


@dataclass(slots=True, eq=False)
class WatchEvent:
    type: EventType
    current: StoredObject
    previous: StoredObject | None = None
    _line: bytes | None = None

    @property
    def resource_version(self) -> int:
        return self.current.resource_version

    def line(self) -> bytes:
        """The event as one line of a watch stream, encoded once for all watchers."""
        if self._line is None:
            self._line = b'{"type":"' + self.type.encode() + b'","object":' + self.current.encoded() + b"}\n"
        return self._line


@dataclass(slots=True, frozen=True)
class Delivery:
    """What a particular watcher sees: selector transitions turn MODIFIED into ADDED/DELETED."""

    type: EventType
    event: WatchEvent

    @property
    def object(self) -> StoredObject:
        return self.event.current


ObjectFilter = Callable[[StoredObject], bool]


@dataclass(eq=False)
class Subscription:
    """A watcher's buffer. Overflowing it closes the watch, as a too-slow watcher is closed by the
    real API server (the client then re-watches from its last resourceVersion)."""

    storage_key: str
    namespace: str | None
    accepts: ObjectFilter | None
    max_pending: int
    after: int = 0
    """Only changes after this resourceVersion are delivered: a watch from a resourceVersion the store has
    not reached (its history went back: an etcd restore) gets nothing until the store passes it, as the
    watch cache's watcher sends only events newer than the version it started from."""
    pending: deque[Delivery] = field(default_factory=deque)
    closed_reason: str | None = None
    _wakeup: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, event: WatchEvent) -> None:
        if self.closed_reason is not None:
            return
        if event.resource_version <= self.after:
            return
        if self.namespace is not None and event.current.namespace != self.namespace:
            # The store fans live changes out by namespace already; a replay from the change window
            # (a watch resuming from a resourceVersion) offers every namespace's, and must not leak them.
            return
        delivery_type = self._delivery_type(event)
        if delivery_type is None:
            return
        if len(self.pending) >= self.max_pending:
            self.close("watcher buffer overflowed")
            return
        self.pending.append(Delivery(delivery_type, event))
        self._wakeup.set()

    def _delivery_type(self, event: WatchEvent) -> EventType | None:
        if self.accepts is None:
            return event.type
        now = self.accepts(event.current)
        if event.type != "MODIFIED" or event.previous is None:
            return event.type if now else None
        before = self.accepts(event.previous)
        if before and now:
            return "MODIFIED"
        if now:
            return "ADDED"
        if before:
            return "DELETED"
        return None

    def close(self, reason: str) -> None:
        if self.closed_reason is None:
            self.closed_reason = reason
        self._wakeup.set()

    async def next_batch(self, wait: float) -> list[Delivery]:
        """Everything buffered, waiting up to ``wait`` seconds for at least one delivery."""
        if not self.pending and self.closed_reason is None:
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout=max(wait, 0.0))
            except TimeoutError:
                return []
        batch = list(self.pending)
        self.pending.clear()
        return batch
