"""Work written in steps (see autoscaler.loop.turns) run in one go, counting the loop's turns it
would give."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

from autoscaler.prometheus.results import InstantResult, SeriesFilter
from autoscaler.prometheus.slicing import SLICE_BYTES, instant_in_slices

T = TypeVar("T")


def run_counting_turns(steps: Generator[None, None, T]) -> tuple[int, T]:
    """(how many times ``steps`` yielded, what it returned)."""
    turns = 0
    while True:
        try:
            next(steps)
            turns += 1
        except StopIteration as done:
            value: T = done.value
            return turns, value


def to_the_end(steps: Generator[None, None, T]) -> T:
    """What ``steps`` returns."""
    return run_counting_turns(steps)[1]


def decoded_in_slices(
    payload: bytes | bytearray, keep: SeriesFilter | None = None, *, slice_bytes: int = SLICE_BYTES
) -> InstantResult:
    """:func:`instant_in_slices` run to the end."""
    return to_the_end(instant_in_slices(payload, keep, slice_bytes=slice_bytes))
