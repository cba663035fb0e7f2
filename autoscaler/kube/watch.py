"""Watch-based caches: list once, then watch; a supervisor relists after any failure.

The behaviour follows client-go's reflector: a watch asks for bookmarks and ends after a random
5–10 minutes (the server closes it), after which it resumes from the last resourceVersion seen; any
failure relists after a jittered backoff (by default 0.8 s doubling to 30 s, reset after two quiet minutes:
:mod:`autoscaler.kube.relists`). A 410 ("too old resource version") after a watch that followed the server
relists at once; 410s in a row (every watch expiring as it opens) are failures like any other, so they
back off too. Steady state makes no LIST calls.

Relists are counted by reason; a cache that relists more than 5 times in a minute (by default: the
service's ``kubernetes.relists``) reports it (:meth:`WatchCache.relisting`, which ``/readyz`` reads) until it
has followed the server for as long again (a minute).

*Any* failure means every exception, not a list of expected ones: a stream cut mid-body, a reset, a
timeout, a line that is not JSON, a bug in a trimmer. Only cancellation ends :meth:`WatchCache.run`.

A watch that stays open but goes silent (a frozen connection: a half-dead load balancer, a paused API
server) is cut once nothing — no event, no bookmark — has come for ``silence_seconds``. The API server
bookmarks an idle watch about once a minute, so once a cache has seen a bookmark, such silence is a
failure (an incident: relist). On a server that has sent this cache no bookmark yet, silence may be
normal: the watch is quietly reopened from the last resourceVersion over a new connection (no LIST,
nothing logged above debug); a watch request whose answer does not even start within the API timeout
is a failure either way.

Each failure *incident* is logged once: a warning when the cache stops following the server
(``watch failed``), an info line when it follows again (``watch recovered``, with how long it was
stale); the retries in between log at debug. :meth:`WatchCache.stale_for` says how long the cache has
not followed the server (0 while it does), measured from the last moment it heard from the server.

Each cache keeps trimmed records (see :mod:`autoscaler.kube.records`) keyed by (namespace, name) and
calls ``on_change(key, old, new)`` for every change, including those a relist reveals.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import structlog

from autoscaler.kube.api import MESSAGE_LIMIT, SILENT, KubeApi, KubeError, ResourcePath
from autoscaler.kube.paging import list_pages
from autoscaler.kube.relists import DEFAULT_RELIST_POLICY, DISCOVERED, ERROR, EXPIRED, RelistPolicy
from autoscaler.values.clipping import clip

R = TypeVar("R")
Key = tuple[str, str]
ChangeHandler = Callable[[Key, Any, Any], None]

log = structlog.get_logger("autoscaler.kube.watch")

TRIM_SLICE = 50  # objects of a listed page trimmed between two turns of the loop (~2 ms of pods)
SILENCE_SECONDS = 90.0  # the API server bookmarks an idle watch about once a minute


class WatchCache(Generic[R]):
    def __init__(
        self,
        api: KubeApi,
        resource: ResourcePath,
        trim: Callable[[Mapping[str, Any]], R | None],
        *,
        namespace: str | None = None,
        on_change: ChangeHandler | None = None,
        min_watch_seconds: int = 300,
        max_watch_seconds: int = 600,
        optional: bool = False,
        recheck_seconds: float = 60.0,
        page_size: int = 500,
        silence_seconds: float = SILENCE_SECONDS,
        label_selector: str | None = None,
        retrim: Callable[[R, Mapping[str, Any]], R | None] | None = None,
        list_slots: asyncio.Semaphore | None = None,
        relist_policy: RelistPolicy = DEFAULT_RELIST_POLICY,
    ) -> None:
        """``retrim(record, obj)``: the record of a new version of an object whose record is ``record``,
        when that can be had for less than a whole ``trim`` (a status write's echo need not parse the
        spec again). ``list_slots``: held for a whole LIST, shared by caches that should not all list at
        once (their pages' decoded objects would all be in memory together). ``relist_policy``: the backoff
        between failed attempts, and how many relists in how long are too often (``kubernetes.relists``)."""
        self.api = api
        self.resource = resource
        self.namespace = namespace
        # The server filters: only the objects it selects are listed and watched. An object whose labels
        # stop matching comes as DELETED (and one that starts to, as ADDED), as the API server sends them.
        self.label_selector = label_selector
        self._trim = trim
        self._retrim = retrim or (lambda _known, obj: trim(obj))
        self._on_change = on_change
        self._watch_seconds = (min_watch_seconds, max_watch_seconds)
        self.silence_seconds = silence_seconds
        self.records: dict[Key, R] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.lists = 0  # LIST requests made, one per page (a steady state makes none)
        self.relist_counts = relist_policy.relists()  # lists after the first, by reason
        self.relist_cause = ""  # what made the cache list again last
        self.backoff = relist_policy.backoff()
        self._expired_in_a_row = 0  # 410s since a watch last followed the server
        self.incidents = 0  # times the cache stopped following the server
        self.last_error: str | None = None
        self.failing_since: float | None = None  # monotonic: last heard from the server, while failing
        self.last_heard: float | None = None  # monotonic: the last list page, event or bookmark
        # Monotonic: when the LIST behind the records began (its snapshot is of that moment or later).
        self.listed_since: float | None = None
        self.bookmarks_seen = False  # the server bookmarks idle watches
        self.unavailable = False  # the resource does not exist on this server (e.g. no VPA CRD)
        # An optional resource that does not exist counts as synced (and empty); it is looked for again
        # every minute (through discovery, not a LIST), so installing its CRD later is noticed.
        self.optional = optional
        self.recheck_seconds = recheck_seconds
        self.page_size = page_size
        self._list_slots = list_slots
        self._unreadable: dict[Key, str] = {}  # objects a trimmer failed on: key -> resourceVersion

    @property
    def name(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.resource.label}{where}"

    def get(self, namespace: str, name: str) -> R | None:
        return self.records.get((namespace, name))

    def stale_for(self) -> float:
        """Seconds since the cache last heard from the server, while it is not following it (0 while it is)."""
        return 0.0 if self.failing_since is None else time.monotonic() - self.failing_since

    @property
    def following(self) -> bool:
        return self.failing_since is None and self.synced.is_set()

    def values(self) -> Iterable[R]:
        return self.records.values()

    @property
    def relists(self) -> int:
        """Lists after the first."""
        return self.relist_counts.total

    def relisting(self, cause_limit: int = MESSAGE_LIMIT) -> str | None:
        """Why this cache relists too often (by default more than 5 times in a minute, and it has not followed
        the server for a minute since), with the cause of its last relist cut to ``cause_limit``; or None."""
        counts, now = self.relist_counts, time.monotonic()
        if counts.last is None or not counts.too_often(now, self.following):
            return None
        return (
            f"{self.name} relisted {counts.streak} times in {now - counts.streak_began:.0f}s, the last "
            f"{now - counts.last:.0f}s ago ({clip(self.relist_cause, cause_limit)})"
        )

    async def run(self) -> None:
        """List and watch until cancelled; nothing but cancellation ends it."""
        reason = ERROR  # why the next list is a relist (the first list is not one)
        while True:
            try:
                async with self._list_slots or contextlib.nullcontext():
                    await self._list(reason)
                while True:
                    await self._watch_once()
                    self._expired_in_a_row = 0  # the watch ran to its end
            except asyncio.CancelledError:
                raise
            except KubeError as exc:
                reason, wait = await self._after(exc)
            except Exception as exc:  # any failure relists; only cancellation ends the cache
                reason, self.relist_cause = ERROR, clip(f"{type(exc).__name__}: {exc}", MESSAGE_LIMIT)
                wait = self._failed(self.relist_cause)
            if wait:
                await asyncio.sleep(wait)

    async def _after(self, exc: KubeError) -> tuple[str, float]:
        """What an error answer that ended a list or a watch means: why the next list is a relist, and the
        seconds to wait before it (0: at once)."""
        self.relist_cause = str(exc)
        if exc.gone:
            self._expired_in_a_row += 1
            if self._expired_in_a_row == 1:  # normal expiry: the watch's resourceVersion was compacted
                log.info("watch expired, relisting", resource=self.name)
                return EXPIRED, 0.0
            return EXPIRED, self._failed(f"{exc} ({self._expired_in_a_row} times in a row, each right after a list)")
        self.unavailable = exc.not_found
        if exc.not_found and self.optional:
            self._recovered()
            self.synced.set()
            log.info("resource not served: treated as empty", resource=self.name)
            await self._until_served()
            self.relist_cause = "the resource is served now"
            return DISCOVERED, 0.0
        return ERROR, self._failed(str(exc))

    def _failed(self, error: str) -> float:
        """A failure: returns the backoff's wait before the next list. Logged once per incident, as a
        warning (at debug while the cache relists too often: that was logged once, as a warning)."""
        self.last_error = error = clip(error, MESSAGE_LIMIT)
        wait = self.backoff.next_wait(time.monotonic())
        retry_in = round(wait, 2)
        if self.failing_since is None:
            self.failing_since = self.last_heard if self.last_heard is not None else time.monotonic()
            self.incidents += 1
            quiet = self.relist_counts.too_often_since is not None
            (log.debug if quiet else log.warning)("watch failed", resource=self.name, error=error, retry_in=retry_in)
        else:
            log.debug("watch still failing", resource=self.name, error=error, retry_in=retry_in)
        return wait

    def _recovered(self) -> None:
        if self.failing_since is not None:
            quiet = self.relist_counts.too_often_since is not None
            (log.debug if quiet else log.info)(
                "watch recovered", resource=self.name, stale_seconds=round(self.stale_for(), 2), error=self.last_error
            )
        self.failing_since = None
        self.last_error = None

    async def _until_served(self) -> None:
        """Return once discovery lists the resource (e.g. its CRD was installed), checking every
        ``recheck_seconds``. Discovery is one small GET; looking with a LIST would make a steady service
        send a LIST a minute."""
        while True:
            await asyncio.sleep(self.recheck_seconds)
            try:
                body = await self.api.get(self.resource.prefix, resource="discovery")
            except KubeError as exc:
                if exc.not_found:
                    continue  # the group/version is not served either
                return  # let the LIST find out what is wrong, and back off as usual
            if any(
                isinstance(r, Mapping) and r.get("name") == self.resource.plural
                for r in (body or {}).get("resources") or []
            ):
                return

    async def _list(self, reason: str) -> None:
        """List in pages of ``page_size``: only one page of whole objects is ever in memory, not every pod
        of the cluster at once. Pages of 500, as client-go's reflector: a page of 500 decoded pods is ~15 MB
        of short-lived objects whose freed memory the allocator keeps (a little more RSS than pages of 100),
        but at 100,000 pods pages of 100 are 1,000 round trips, and start-up to the first full pass took far
        longer than its 60 s goal (why: docs/benchmarks-history.md, "Where 10,000 targets broke first"). The
        next page is asked for before this one is trimmed, so the server serves it meanwhile (two pages in
        memory at most). A continue token that expired (410) relists from the start, through :meth:`run`."""
        fresh: dict[Key, R] = {}
        version = ""
        began = time.monotonic()
        pages = list_pages(
            self.api,
            self.resource.collection(self.namespace),
            resource=self.resource.label,
            page_size=self.page_size,
            label_selector=self.label_selector,
            on_ask=self._asked,
        )
        async with contextlib.aclosing(pages):
            async for body in pages:
                version = str((body.get("metadata") or {}).get("resourceVersion") or "")
                for position, obj in enumerate(body.get("items") or []):
                    if position % TRIM_SLICE == 0:
                        await asyncio.sleep(0)  # the loop's other work, the next page's request among it
                    if not isinstance(obj, Mapping):
                        continue
                    key = _key(obj)
                    record = self._trimmed(key, obj)
                    if record is not None:
                        fresh[key] = record
                del body
        if self.synced.is_set():
            self._relisted(reason)
        old = self.records
        self.records = fresh
        self.resource_version = version
        self.listed_since = began
        self.unavailable = False
        self.last_heard = time.monotonic()
        self._recovered()
        self.synced.set()
        if self._on_change is not None:
            for key in old.keys() | fresh.keys():
                before, after = old.get(key), fresh.get(key)
                if before != after:
                    self._on_change(key, before, after)

    def _asked(self) -> None:
        self.lists += 1

    def _relisted(self, reason: str) -> None:
        """Count a relist; log when it makes the cache one that relists too often (once, until it settles)."""
        now = time.monotonic()
        counts = self.relist_counts
        if counts.record(now, reason, self.failing_since if self.failing_since is not None else now):
            log.warning(
                "watch relisting too often",
                resource=self.name,
                relists=counts.streak,
                seconds=round(now - counts.streak_began, 1),
                reason=reason,
                error=self.relist_cause,
            )

    def _settle(self) -> None:
        """A watch event while the cache relists too often: that is over once a window has passed since the
        last relist with the cache following the server."""
        if self.relist_counts.settle(time.monotonic()):
            log.info("watch relisting calmed down", resource=self.name)

    async def _watch_once(self) -> None:
        try:
            await self._follow_one_watch()
        except KubeError as exc:
            if exc.reason != SILENT or self.bookmarks_seen:
                raise
            log.debug("quiet watch reopened", resource=self.name, seconds=self.silence_seconds)

    async def _follow_one_watch(self) -> None:
        seconds = random.randint(*self._watch_seconds)
        async for event in self.api.watch(
            self.resource.collection(self.namespace),
            resource_version=self.resource_version,
            timeout_seconds=seconds,
            label_selector=self.label_selector,
            resource=self.resource.label,
            idle_timeout=self.silence_seconds,
        ):
            self.last_heard = time.monotonic()
            self._expired_in_a_row = 0
            if self.relist_counts.too_often_since is not None:
                self._settle()
            obj = event.get("object")
            if not isinstance(obj, Mapping):
                raise KubeError(0, "Malformed", f"watch {self.name}: an event without an object")
            meta = obj.get("metadata") or {}
            version = meta.get("resourceVersion")
            if version:
                self.resource_version = str(version)
            kind = event.get("type")
            if kind == "BOOKMARK":
                self.bookmarks_seen = True
                continue
            key = _key(obj)
            before = self.records.get(key)
            after = None if kind == "DELETED" else self._trimmed(key, obj)
            if after is None:
                self.records.pop(key, None)
            else:
                self.records[key] = after
            if self._on_change is not None and before != after:
                self._on_change(key, before, after)

    def _trimmed(self, key: Key, obj: Mapping[str, Any]) -> R | None:
        """The record of one object; an object the trimmer fails on is left out (and logged once per
        version), so one odd object never stops the cache from following every other one."""
        try:
            known = self.records.get(key)
            record = self._trim(obj) if known is None else self._retrim(known, obj)
        except Exception as exc:  # see the docstring
            version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if self._unreadable.get(key) != version:
                self._unreadable[key] = version
                log.error(
                    "object could not be read: left out of the cache",
                    resource=self.name,
                    namespace=key[0],
                    name=key[1],
                    error=f"{type(exc).__name__}: {exc}",
                )
            return None
        self._unreadable.pop(key, None)
        return record


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name"))
