"""Per-target backoff of writes that keep failing (the scale, the status, the VPA).

Upstream's HPA retries a failed write at its next sync, every period, for as long as the API server
fails: with thousands of targets and a struggling server, that is a write storm aimed at the moment it
hurts most. This is client-go's per-item exponential limiter instead (``ItemExponentialFailureRateLimiter``),
starting at one sync period — so a single failure is retried at the next sync, as upstream does — and
doubling per consecutive failure up to a cap of five minutes, well under the usual stabilization
windows, so a recovered server is written to again soon. Each delay is jittered down by up to 20 %,
so targets that failed together do not come back together. Any successful round of writes resets it.

Pure bookkeeping on a monotonic clock passed in; the reconciler decides what counts as a failure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

WRITE_BACKOFF_CAP = 300.0  # seconds
JITTER = 0.2  # each delay is shortened by up to this fraction
# One jitter source for every target's backoff: a Random of each (two per target) cost a Mersenne Twister
# state and an os.urandom seeding apiece (docs/benchmarks-history.md, "The collector's walk cut").
_JITTER_SOURCE = random.Random()


@dataclass
class WriteBackoff:
    base: float  # the first delay: one sync period
    cap: float = WRITE_BACKOFF_CAP
    failures: int = 0  # consecutive failed rounds of writes
    delay: float = 0.0  # the delay chosen after the last failure (0 while writes succeed)
    next_attempt: float | None = None  # monotonic: writes wait until then
    last_error: str = ""
    _random: random.Random = field(default=_JITTER_SOURCE, repr=False)

    def failed(self, error: str, now: float) -> float:
        """Record a failed round of writes at ``now``; returns the delay until the next attempt."""
        self.failures += 1
        ceiling = min(max(self.cap, self.base), self.base * 2.0 ** min(self.failures - 1, 40))
        self.delay = ceiling * (1 - JITTER * self._random.random())
        self.next_attempt = now + self.delay
        self.last_error = error
        return self.delay

    def succeeded(self) -> bool:
        """Writes work again: forget the failures. True when there were some (a recovery)."""
        recovered = self.failures > 0
        self.failures, self.delay, self.next_attempt, self.last_error = 0, 0.0, None, ""
        return recovered

    def holding(self, now: float) -> bool:
        """Whether a sync at ``now`` must not write yet. Syncs come a period apart on a grid, so a sync
        less than half a period before the next attempt goes ahead (the first retry is the next sync)."""
        return self.next_attempt is not None and now < self.next_attempt - self.base / 2

    def remaining(self, now: float) -> float:
        return max(0.0, (self.next_attempt or now) - now)
