"""When a watch cache lists again: client-go's backoff between attempts, and a cache that relists too often.

:class:`RelistBackoff` is client-go's reflector backoff (``wait.NewExponentialBackoffManager(800ms, 30s,
2min, 2.0, 1.0)``): each wait is the current step, jittered up to twice as long; the step doubles up to 30 s
(waits of 30–60 s: ~0.02 LISTs a second per cache against a failing server), and starts over once no wait
has begun for two minutes (the server is presumed healthy again). The reflector waits before *every*
relist; here the first 410 Gone after a healthy watch relists at once (a compacted resourceVersion is
normal, :mod:`autoscaler.kube.watch`), but 410s in a row wait like any other failure.

:class:`Relists` counts a cache's relists by reason and says when it relists too often: more than
:data:`RELIST_LIMIT` times within :data:`RELIST_WINDOW` seconds (a watch answered 410 every time, or a
LIST whose resourceVersion expires at once, would otherwise relist for ever with readiness green). That
state lasts until the cache has followed the server for a whole window after its last relist: once the
backoff has grown to its cap, relists come less often than the limit, but the cache still does not follow.

The numbers are client-go's and this service's defaults; :class:`RelistPolicy` carries them, and the service's
``kubernetes.relists`` settings may change them (docs/configuration.md).

Both are pure: the time is passed in (``time.monotonic()`` seconds), the randomness is a function.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "BACKOFF_CAP",
    "BACKOFF_START",
    "DEFAULT_RELIST_POLICY",
    "HEALTHY_RESET",
    "RELIST_LIMIT",
    "RELIST_WINDOW",
    "RelistBackoff",
    "RelistPolicy",
    "Relists",
]

BACKOFF_START = 0.8
BACKOFF_CAP = 30.0
BACKOFF_FACTOR = 2.0
BACKOFF_JITTER = 1.0  # each wait is its step × (1 + up to this)
HEALTHY_RESET = 120.0  # no wait begun for this long: the next failure starts over from BACKOFF_START
RELIST_LIMIT = 5
RELIST_WINDOW = 60.0

# Why a cache listed again (the ``reason`` label of ``autoscaler_cache_relists_total``).
EXPIRED = "expired"  # 410 Gone: the watch's (or a continued LIST's) resourceVersion was compacted
ERROR = "error"  # any other failure: a cut, a reset, a frozen watch, an error answer
DISCOVERED = "discovered"  # an optional resource that was not served is served now (its CRD installed)
REASONS = (EXPIRED, ERROR, DISCOVERED)


@dataclass(frozen=True, slots=True)
class RelistPolicy:
    """A cache's backoff between failed attempts and when it relists too often (see the module)."""

    backoff_start: float = BACKOFF_START  # the first wait's step (seconds)
    backoff_cap: float = BACKOFF_CAP  # the step doubles up to this (seconds)
    limit: int = RELIST_LIMIT  # more relists than this within ``window`` is too often
    window: float = RELIST_WINDOW  # seconds; also how long it must follow the server again after that

    def backoff(self) -> RelistBackoff:
        return RelistBackoff(start=self.backoff_start, cap=self.backoff_cap)

    def relists(self) -> Relists:
        return Relists(self.limit, self.window)


DEFAULT_RELIST_POLICY = RelistPolicy()


class RelistBackoff:
    """client-go's ``ExponentialBackoffManager`` for a reflector: see the module's docstring."""

    def __init__(
        self,
        *,
        start: float = BACKOFF_START,
        cap: float = BACKOFF_CAP,
        factor: float = BACKOFF_FACTOR,
        jitter: float = BACKOFF_JITTER,
        reset_after: float = HEALTHY_RESET,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.start = start
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._rand = rand
        self.step = start
        self._last_wait: float | None = None  # when the last wait began

    def quiet(self, now: float) -> bool:
        """Whether no wait has begun for :attr:`reset_after` seconds (the next one starts over)."""
        return self._last_wait is None or now - self._last_wait > self.reset_after

    def next_wait(self, now: float) -> float:
        """The seconds to wait before the next attempt, a wait beginning ``now``."""
        if self.quiet(now):
            self.step = self.start
        self._last_wait = now
        step = self.step
        self.step = min(self.cap, self.step * self.factor)
        return step * (1.0 + self.jitter * self._rand())


class Relists:
    """A cache's relists: counted by reason, and whether it relists too often (see the module)."""

    def __init__(self, limit: int = RELIST_LIMIT, window: float = RELIST_WINDOW) -> None:
        self.limit = limit
        self.window = window
        self.counts: dict[str, int] = {}
        self._recent: deque[float] = deque(maxlen=limit + 1)  # when the last relists were
        self.too_often_since: float | None = None
        # While it relists too often: since when (the first of the relists that made it so), and how many.
        self.streak_began = 0.0
        self.streak = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def last(self) -> float | None:
        return self._recent[-1] if self._recent else None

    def recent(self, now: float) -> int:
        """Relists within the last window (at most :attr:`limit` + 1 are remembered)."""
        return sum(1 for moment in self._recent if now - moment <= self.window)

    def record(self, now: float, reason: str, followed_until: float) -> bool:
        """A relist at ``now`` for ``reason``; ``followed_until``: when the cache last stopped following the
        server (``now`` when it just did). True when this relist makes it one that relists too often."""
        self.settle(followed_until)
        self.counts[reason] = self.counts.get(reason, 0) + 1
        self._recent.append(now)
        if self.too_often_since is not None:
            self.streak += 1
            return False
        if len(self._recent) > self.limit and now - self._recent[0] <= self.window:
            self.too_often_since = now
            self.streak_began, self.streak = self._recent[0], len(self._recent)
            return True
        return False

    def settle(self, followed_until: float) -> bool:
        """End the relisting-too-often state if the cache followed the server, until ``followed_until``, for a
        whole window after its last relist. True when it ended now."""
        last = self.last
        if self.too_often_since is None or last is None or followed_until - last < self.window:
            return False
        self.too_often_since = None
        return True

    def too_often(self, now: float, following: bool) -> bool:
        """Whether the cache relists too often, as of ``now`` (``following``: it follows the server now)."""
        return self.too_often_since is not None and not (following and self._stable(now))

    def _stable(self, now: float) -> bool:
        last = self.last
        return last is not None and now - last >= self.window
