"""A plain-text progress bar on stderr, for long runs on a terminal (never in a pipe or a log)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from autoscaler.values.durations import format_seconds
from autoscaler.values.timestamps import rfc3339_millis

_WIDTH = 30


class Progress:
    """Call :meth:`update` every sync; it draws at most every ``interval`` seconds, and only after
    ``delay`` seconds, so short runs print nothing."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        delay: float = 0.5,
        interval: float = 0.2,
    ) -> None:
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._started = time.monotonic()
        self._next = self._started + delay
        self._interval = interval
        self._drawn = False

    def update(self, done: int, at: float) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next and done < self.total:
            return
        self._next = now + self._interval
        elapsed = now - self._started
        fraction = done / self.total
        filled = round(_WIDTH * fraction)
        left = elapsed * (1 - fraction) / fraction if fraction else 0.0
        eta = "" if not 0 < fraction < 1 else "  <1s left" if left < 1 else f"  {format_seconds(left)} left"
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (_WIDTH - filled)}] {100 * fraction:3.0f}%  "
            f"{done:,}/{self.total:,} syncs  at {rfc3339_millis(at)}{eta}   "
        )
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
