"""Demo time: the sandbox runs faster than real time by scaling every time constant by ``1/speed``.

The service keeps running on the wall clock, unchanged; only the numbers it is configured with are
compressed (see docs/demo.md). Everything the demo prints is in *demo seconds*: wall seconds since
the curve started, times ``speed``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# Every whole-second duration of the demo target (behavior periods and windows) is a multiple of 60,
# so these speeds compress them to whole seconds exactly: the service rejects fractions there.
SPEEDS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60)


@dataclass
class TimeScale:
    speed: int
    _unix_origin: float | None = field(default=None, init=False)
    _mono_origin: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        if self.speed not in SPEEDS:
            raise ValueError(f"speed must be one of {', '.join(map(str, SPEEDS))}, not {self.speed}")

    def start(self) -> None:
        """Demo time 0 is now."""
        self._unix_origin = time.time()
        self._mono_origin = time.monotonic()

    @property
    def started(self) -> bool:
        return self._unix_origin is not None

    def wall(self, demo_seconds: float) -> float:
        """Wall seconds that ``demo_seconds`` take."""
        return demo_seconds / self.speed

    def whole_wall(self, demo_seconds: int) -> int:
        """Whole wall seconds for a whole-second field of the target (exact for the speeds allowed)."""
        wall, remainder = divmod(demo_seconds, self.speed)
        if remainder:
            raise ValueError(f"{demo_seconds} s does not compress to whole seconds at speed {self.speed}")
        return wall

    def now(self) -> float:
        """Demo seconds since the start (0 before it)."""
        if self._unix_origin is None:
            return 0.0
        return (time.monotonic() - self._mono_origin) * self.speed

    def at(self, unix_time: float) -> float:
        """The demo time of a Unix time (a query's ``time=``); negative before the start."""
        if self._unix_origin is None:
            return 0.0
        return (unix_time - self._unix_origin) * self.speed


def clock_text(demo_seconds: float) -> str:
    """``m:ss`` (``h:mm:ss`` past an hour), for the timeline."""
    whole = max(0, round(demo_seconds))
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
