"""In-memory object storage: the emulator's etcd plus its watch cache.

* One global, monotonically increasing resourceVersion counter (as etcd's revision).
* Objects are kept per storage key (group/plural) with a namespace index and an inverted
  label index, so a namespaced or ``app=web`` list costs O(matching objects), not O(all).
* Each storage key keeps a bounded window of change events; watching from a
  resourceVersion older than the window is answered with 410 Expired.
* Every committed version of every object is kept (bounded per object) for tests to
  inspect, e.g. the sequence of replica counts a Deployment went through.
* A :class:`Snapshot` of every object can be restored later, as an etcd backup is: the revision
  goes back (or forward, bumped), the change windows start again, every watch ends.

The store knows nothing about kinds or API semantics: that is
:mod:`kube_emulator.operations`.
"""

from __future__ import annotations

import bisect
import builtins
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kube_emulator.errors import expired
from kube_emulator.jsonutil import JsonObject, metadata
from kube_emulator.selectors import EVERYTHING, LabelSelector
from kube_emulator.watch import StoredObject, Subscription, WatchEvent

ObjectKey = tuple[str, str]
"""``(namespace, name)``; the namespace is ``""`` for cluster-scoped objects."""

ChangeListener = Callable[[str, WatchEvent], None]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The store's objects at one revision, as ``etcdctl snapshot save`` keeps them (their committed
    versions are never changed, so holding them is enough)."""

    revision: int
    objects: dict[str, dict[ObjectKey, StoredObject]]


@dataclass(eq=False)
class _Bucket:
    """All objects of one storage key, with their indexes, recent events and watchers."""

    history_size: int
    objects: dict[ObjectKey, StoredObject] = field(default_factory=dict)
    by_namespace: dict[str, dict[str, StoredObject]] = field(default_factory=dict)
    label_index: dict[str, dict[str, set[ObjectKey]]] = field(default_factory=dict)
    events: deque[WatchEvent] = field(default_factory=deque)
    compacted_rv: int = 0
    """Events at or below this resourceVersion have left the window."""
    watchers: dict[str | None, set[Subscription]] = field(default_factory=dict)
    order: list[ObjectKey] | None = None
    """Every key, sorted; dropped when an object comes or goes (a paged LIST of 10,000 pods would
    otherwise sort them all again for every page)."""

    def sorted_keys(self) -> list[ObjectKey]:
        if self.order is None:
            self.order = sorted(self.objects)
        return self.order

    def index(self, key: ObjectKey, stored: StoredObject) -> None:
        if key not in self.objects:
            self.order = None
        self.objects[key] = stored
        self.by_namespace.setdefault(key[0], {})[key[1]] = stored
        for label, value in stored.labels.items():
            self.label_index.setdefault(label, {}).setdefault(value, set()).add(key)

    def unindex(self, key: ObjectKey, stored: StoredObject, *, replacing: bool = False) -> None:
        """Remove ``stored`` from the indexes; ``replacing``: a new version of it is indexed next."""
        if not replacing:
            self.order = None
        del self.objects[key]
        names = self.by_namespace[key[0]]
        del names[key[1]]
        if not names:
            del self.by_namespace[key[0]]
        for label, value in stored.labels.items():
            postings = self.label_index[label][value]
            postings.discard(key)
            if not postings:
                del self.label_index[label][value]
                if not self.label_index[label]:
                    del self.label_index[label]

    def record(self, event: WatchEvent) -> None:
        if self.history_size <= 0:
            self.compacted_rv = event.resource_version
            return
        if len(self.events) >= self.history_size:
            self.compacted_rv = self.events.popleft().resource_version
        self.events.append(event)


class ObjectStore:
    def __init__(self, *, watch_history: int = 1000, versions_per_object: int | None = 100) -> None:
        self._watch_history = watch_history
        self._versions_per_object = versions_per_object
        self._buckets: dict[str, _Bucket] = {}
        self._versions: dict[tuple[str, str, str], deque[JsonObject]] = {}
        self._listeners: dict[str, list[ChangeListener]] = {}
        self._revision = 0
        self._window_start = 0  # the revision the change windows began at (a restore's; 0: the first write)

    # --- reading ---------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The latest committed revision (what a LIST reports)."""
        return self._revision

    def _bucket(self, storage_key: str) -> _Bucket:
        bucket = self._buckets.get(storage_key)
        if bucket is None:
            bucket = _Bucket(history_size=self._watch_history, compacted_rv=self._window_start)
            self._buckets[storage_key] = bucket
        return bucket

    def get(self, storage_key: str, namespace: str, name: str) -> StoredObject | None:
        bucket = self._buckets.get(storage_key)
        return bucket.objects.get((namespace, name)) if bucket else None

    def count(self, storage_key: str) -> int:
        bucket = self._buckets.get(storage_key)
        return len(bucket.objects) if bucket else 0

    def list(
        self, storage_key: str, namespace: str | None = None, labels: LabelSelector = EVERYTHING
    ) -> builtins.list[StoredObject]:
        """Objects in ``namespace`` (``None``: all) matching ``labels``, sorted by namespace/name."""
        bucket = self._buckets.get(storage_key)
        if bucket is None:
            return []
        candidates: Iterable[StoredObject]
        postings = self._narrowest_postings(bucket, labels)
        if postings is None and namespace is None and labels.is_empty():
            return [bucket.objects[key] for key in bucket.sorted_keys()]  # already in namespace/name order
        if postings is not None:
            candidates = (bucket.objects[key] for key in postings if namespace is None or key[0] == namespace)
        elif namespace is not None:
            candidates = bucket.by_namespace.get(namespace, {}).values()
        else:
            candidates = bucket.objects.values()
        found = [stored for stored in candidates if labels.is_empty() or labels.matches(stored.labels)]
        found.sort(key=lambda stored: (stored.namespace, stored.name))
        return found

    @staticmethod
    def _narrowest_postings(bucket: _Bucket, labels: LabelSelector) -> set[ObjectKey] | None:
        narrowest: set[ObjectKey] | None = None
        for key, values in labels.indexable():
            by_value = bucket.label_index.get(key, {})
            postings: set[ObjectKey] = set()
            for value in values:
                postings |= by_value.get(value, set())
            if narrowest is None or len(postings) < len(narrowest):
                narrowest = postings
        return narrowest

    def page(self, storage_key: str, after: ObjectKey | None, count: int) -> tuple[builtins.list[StoredObject], int]:
        """Up to ``count`` objects of every namespace after the key ``after`` (``None``: from the first), in
        namespace/name order, and how many objects follow ``after`` in all: one page of an unselective
        LIST without the objects before it (the whole list per page made a 100,000-pod LIST quadratic)."""
        bucket = self._buckets.get(storage_key)
        if bucket is None:
            return [], 0
        keys = bucket.sorted_keys()
        first = 0 if after is None else bisect.bisect_right(keys, after)
        return [bucket.objects[key] for key in keys[first : first + count]], len(keys) - first

    def versions(self, storage_key: str, namespace: str, name: str) -> builtins.list[JsonObject]:
        """Every committed version of the object, oldest first (shared, do not mutate)."""
        return list(self._versions.get((storage_key, namespace, name), ()))

    # --- writing ---------------------------------------------------------------------------------

    def write(self, storage_key: str, obj: JsonObject) -> StoredObject:
        """Commit a new version of ``obj`` (a private dict the store takes ownership of).

        Assigns the next resourceVersion, updates indexes, records the event and notifies
        watchers. ADDED or MODIFIED is decided by whether the object existed.
        """
        meta = metadata(obj)
        key: ObjectKey = (str(meta.get("namespace") or ""), str(meta["name"]))
        bucket = self._bucket(storage_key)
        previous = bucket.objects.get(key)
        self._revision += 1
        meta["resourceVersion"] = str(self._revision)
        stored = StoredObject(obj, self._revision)
        if previous is not None:
            bucket.unindex(key, previous, replacing=True)
        bucket.index(key, stored)
        self._remember_version(storage_key, key, obj)
        self._publish(storage_key, bucket, WatchEvent("MODIFIED" if previous else "ADDED", stored, previous))
        return stored

    def remove(
        self, storage_key: str, namespace: str, name: str, final: JsonObject | None = None
    ) -> StoredObject | None:
        """Delete the object. The DELETED event carries its last state (or ``final``, a private dict:
        an update that removed the last finalizer) at a new resourceVersion."""
        bucket = self._buckets.get(storage_key)
        key: ObjectKey = (namespace, name)
        previous = bucket.objects.get(key) if bucket else None
        if bucket is None or previous is None:
            return None
        self._revision += 1
        if final is None:
            final = dict(previous.obj)
            final["metadata"] = dict(previous.obj["metadata"])
            final["metadata"]["resourceVersion"] = str(self._revision)
        else:
            final["metadata"]["resourceVersion"] = str(self._revision)
            self._remember_version(storage_key, key, final)
        stored = StoredObject(final, self._revision)
        bucket.unindex(key, previous)
        self._publish(storage_key, bucket, WatchEvent("DELETED", stored))
        return stored

    def drop(self, storage_key: str, reason: str) -> None:
        """Forget a whole storage key (its CRD was deleted): objects, history and watchers."""
        bucket = self._buckets.pop(storage_key, None)
        if bucket is None:
            return
        for subscriptions in bucket.watchers.values():
            for subscription in subscriptions:
                subscription.close(reason)
        for key in [key for key in self._versions if key[0] == storage_key]:
            del self._versions[key]

    def _remember_version(self, storage_key: str, key: ObjectKey, obj: JsonObject) -> None:
        if self._versions_per_object == 0:
            return
        versions = self._versions.get((storage_key, *key))
        if versions is None:
            versions = deque(maxlen=self._versions_per_object)
            self._versions[(storage_key, *key)] = versions
        versions.append(obj)

    def _publish(self, storage_key: str, bucket: _Bucket, event: WatchEvent) -> None:
        bucket.record(event)
        for scope in (event.current.namespace, None):
            for subscription in bucket.watchers.get(scope, ()):
                subscription.offer(event)
        for listener in self._listeners.get(storage_key, ()):
            listener(storage_key, event)

    # --- watching --------------------------------------------------------------------------------

    def subscribe(self, subscription: Subscription) -> None:
        self._bucket(subscription.storage_key).watchers.setdefault(subscription.namespace, set()).add(subscription)

    def unsubscribe(self, subscription: Subscription) -> None:
        bucket = self._buckets.get(subscription.storage_key)
        if bucket is not None:
            bucket.watchers.get(subscription.namespace, set()).discard(subscription)

    def close_watchers(self, reason: str) -> None:
        """End every open watch (used on shutdown so streaming responses finish promptly)."""
        for bucket in self._buckets.values():
            for subscriptions in bucket.watchers.values():
                for subscription in subscriptions:
                    subscription.close(reason)

    def watcher_count(self, storage_key: str | None = None) -> int:
        buckets = [self._buckets.get(storage_key)] if storage_key else list(self._buckets.values())
        return sum(len(s) for bucket in buckets if bucket for s in bucket.watchers.values())

    def events_since(self, storage_key: str, resource_version: int) -> builtins.list[WatchEvent]:
        """Recorded events after ``resource_version``; 410 Expired if the window has moved past it."""
        bucket = self._bucket(storage_key)
        if resource_version < bucket.compacted_rv:
            raise expired(f"too old resource version: {resource_version} ({bucket.compacted_rv + 1})")
        newer: builtins.list[WatchEvent] = []
        for event in reversed(bucket.events):
            if event.resource_version <= resource_version:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def compact(self, storage_key: str | None = None) -> None:
        """Drop recorded events (all kinds, or one), as etcd compaction does: older watches get 410."""
        for key in [storage_key] if storage_key else list(self._buckets):
            bucket = self._bucket(key)
            bucket.events.clear()
            bucket.compacted_rv = self._revision

    # --- etcd snapshots ----------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Every object as it is now, at the current revision."""
        return Snapshot(self._revision, {key: dict(bucket.objects) for key, bucket in self._buckets.items()})

    def restore(self, snapshot: Snapshot, *, bump_revision: int = 0) -> None:
        """Replace every object with the snapshot's, as ``etcdutl snapshot restore`` and restarted API
        servers do: every open watch ends, the change windows start empty at the restored revision
        (a watch from an older version is 410 Expired), and the revision goes back to the snapshot's
        plus ``bump_revision`` (``--bump-revision``; with it, ``--mark-compacted``: every version a
        client saw before is then older than the window, and gets 410). Without a bump, versions
        issued after the snapshot are issued again to other changes. In-process listeners hear
        nothing: the world was replaced, nothing changed in it (restart the controllers)."""
        self.close_watchers("the API server restarted: etcd was restored from a snapshot")
        self._buckets = {}
        self._revision = self._window_start = snapshot.revision + max(0, bump_revision)
        for storage_key, objects in snapshot.objects.items():
            bucket = self._bucket(storage_key)
            for key, stored in objects.items():
                bucket.index(key, stored)
                versions = self._versions.get((storage_key, *key))
                if not versions or versions[-1] is not stored.obj:
                    self._remember_version(storage_key, key, stored.obj)

    def add_listener(self, storage_key: str, listener: ChangeListener) -> None:
        """Call ``listener`` synchronously after each change of ``storage_key`` (in-process watch)."""
        self._listeners.setdefault(storage_key, []).append(listener)

    def remove_listener(self, storage_key: str, listener: ChangeListener) -> None:
        listeners = self._listeners.get(storage_key, [])
        if listener in listeners:
            listeners.remove(listener)
