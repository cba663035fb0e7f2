"""Run work written in steps (see autoscaler.prometheus.turns) and count the loop's turns it would give."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

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
