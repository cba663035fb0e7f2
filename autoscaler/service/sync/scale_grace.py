"""A scale write that a stop lets finish: no new scale write is sent once the reconciler is stopped, but one
already sent is finished, with the status that records it, for :data:`SCALE_WRITE_GRACE_SECONDS` at most.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import structlog

from autoscaler.service.sync.writes import SCALE_WRITE_GRACE_SECONDS, TargetWrites

log = structlog.get_logger("autoscaler.reconciler")

T = TypeVar("T")


async def finish_scale_write(writing: asyncio.Future[T], writes: TargetWrites, forget_state: Callable[[], None]) -> T:
    """``writing``'s result. Stopped meanwhile (cancelled): no scale write is sent from then on, but one sent
    is finished with the status that records it, for :data:`SCALE_WRITE_GRACE_SECONDS` at most (at once when
    this instance may no longer write: nothing more would be written), then the stop goes on.
    ``forget_state`` is called when the sync did not end as it would have: the next sync (or a successor)
    restores its state from the status, the pending write included."""
    try:
        return await asyncio.shield(writing)
    except asyncio.CancelledError:
        writes.stop_scaling()
        try:
            if writes.may_write():
                log.info("stopping: the scale write in flight is finished first, and the status that records it")
                await asyncio.wait((writing,), timeout=SCALE_WRITE_GRACE_SECONDS)
        finally:  # cancelled again while waiting, too
            if not writing.done():
                # Cut short: the status holds the write as pending, and a sync reading it settles it.
                log.warning("stopped before the scale write in flight was recorded", grace=SCALE_WRITE_GRACE_SECONDS)
                writing.cancel()
                forget_state()
            elif not writing.cancelled() and writing.exception() is not None:
                # The stop ended it before its scale write (nothing more was written), or a bug did.
                forget_state()
        raise
