"""The service's clock, and how far it is from its peers' clocks.

Decisions need Unix time (stabilization windows and policies compare it with the times kept in a
target's status), but the wall clock can jump: NTP stepping a bad clock, a VM resumed, an operator's
``date -s``. A step forward would end every stabilization window at once (a premature scale-down); a
step back would hold the old recommendations for as long as the step (no scale-down for minutes).

:class:`ProcessClock` is Unix time that runs at the monotonic clock's rate: it starts at the wall
clock's reading and moves by the monotonic time elapsed, so a step of the wall clock does not move it.
It follows a wall clock that was corrected after start-up only by slewing, at most ``slew`` seconds a
second (500 ppm, the most ``adjtime`` slews): a 5 min window is then off by 0.15 s at worst. A large
correction is followed only slowly (a minute takes 33 hours), so a gap of more than ``report_after``
seconds between the two is logged once (``wall clock stepped``): restart the service after fixing a badly
wrong clock if its status times should follow at once.

:class:`SkewMonitor` estimates how far this clock is from a peer's (Prometheus' ``Date`` header),
exports it as ``autoscaler_clock_skew_seconds{peer}``, logs a warning once when it passes the bound
(``sync.clockSkewWarningSeconds``) and once when it is back, and gives the note that metric failures
carry meanwhile, so that "no data" reads "no data, and the clocks disagree".
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

import structlog

log = structlog.get_logger("autoscaler.clock")

MAX_SLEW = 0.0005  # seconds per second


class ProcessClock:
    def __init__(
        self,
        *,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        slew: float = MAX_SLEW,
        report_after: float = 10.0,
    ) -> None:
        self._wall = wall
        self._monotonic = monotonic
        self.slew = slew
        self.report_after = report_after
        self._last_monotonic = monotonic()
        self._last = wall()
        self.stepped = False  # the wall clock is more than report_after away (logged once per incident)

    def now(self) -> float:
        """Unix time, never stepping; non-decreasing."""
        current = self._monotonic()
        elapsed = max(0.0, current - self._last_monotonic)
        base = self._last + elapsed
        limit = self.slew * elapsed
        gap = self._wall() - base
        base += max(-limit, min(limit, gap))
        self._last, self._last_monotonic = base, current
        if not self.stepped and abs(gap) > self.report_after:
            self.stepped = True
            log.warning(
                "wall clock stepped",
                seconds=round(gap, 1),
                message="decisions keep the monotonic clock's time and follow the wall clock by "
                f"slewing at most {self.slew * 1000:g} ms a second",
            )
        elif self.stepped and abs(gap) <= self.report_after / 2:
            self.stepped = False
        return base


class SkewMonitor:
    """The skew of one peer's clock: ``ours - peer`` in seconds (positive: this service is ahead).

    An HTTP ``Date`` has whole seconds, and the answer left the peer somewhere between our request and
    its arrival: each sample estimates the peer's time as its ``Date`` plus half a second at the middle
    of the round trip. Of the recent samples, the one with the shortest round trip is used (as NTP
    does): a slow answer says least about when it was stamped.
    """

    def __init__(
        self, peer: str, bound: float, report: Callable[[str, float], None] | None = None, *, samples: int = 8
    ) -> None:
        self.peer = peer
        self.bound = bound
        self._report = report
        self._samples: deque[tuple[float, float]] = deque(maxlen=samples)  # (round trip, skew)
        self.skew: float | None = None
        self.beyond = False

    def observe(self, peer_time: float, sent: float, received: float) -> None:
        round_trip = max(0.0, received - sent)
        self._samples.append((round_trip, (sent + received) / 2 - (peer_time + 0.5)))
        self.skew = min(self._samples)[1]
        if self._report is not None:
            self._report(self.peer, self.skew)
        # Back within the bound with a margin before it is called resolved: no flapping at the edge.
        if not self.beyond and abs(self.skew) > self.bound:
            self.beyond = True
            log.warning(
                "clock skew", peer=self.peer, seconds=round(self.skew, 1), bound=self.bound, message=self.describe()
            )
        elif self.beyond and abs(self.skew) <= 0.8 * self.bound:
            self.beyond = False
            log.info("clock skew resolved", peer=self.peer, seconds=round(self.skew, 1), bound=self.bound)

    def describe(self) -> str:
        assert self.skew is not None
        direction = "ahead of" if self.skew > 0 else "behind"
        return (
            f"this service's clock is {abs(self.skew):.0f}s {direction} {self.peer}'s "
            f"(clock skew beyond {self.bound:g}s: check NTP on both)"
        )

    def note(self) -> str | None:
        """What a metric failure adds while the skew is beyond the bound."""
        return self.describe() if self.beyond else None
