"""Log lines written by a thread of their own, so that a slow log stream never holds the event loop.

Writing to stderr is a blocking call: a pipe whose reader falls behind (a container runtime under load,
a log shipper that stalls, a terminal scrolled back) blocks the writer until it drains. Written from the
loop, every reconciler, probe and watch waits meanwhile: at 10,000 targets the lines of a start-up held
the loop for over a second. Here a line is formatted where it is logged (the
task's context variables are there), queued, and written by the ``log-writer`` thread, in batches.

A woken writer lingers :data:`LINGER_SECONDS` before it takes the queue: a namespace's targets sync
together, and a first pass logs a line for every target. Woken for each line, the writer thread took the
interpreter lock from the loop's thread once a line (docs/benchmarks-history.md, "Collector steering, the
scrape's measure, where a sync's CPU goes"). :meth:`flush` cuts the lingering short.

The queue is bounded: if the stream does not keep up with :data:`LINES_QUEUED` lines, further lines are
dropped and counted, and a warning saying how many follows the lines written before them — a stream
that stays stuck costs log lines, never the service's memory or its loop. :meth:`flush` (called by the
logging module at exit, and by the service when it stops) waits until the queue is written.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import TextIO

LINES_QUEUED = 10_000
FLUSH_TIMEOUT_SECONDS = 5.0
LINGER_SECONDS = 0.05


class ThreadedStreamHandler(logging.Handler):
    """A :class:`logging.StreamHandler` whose writes happen in its own thread."""

    def __init__(self, stream: TextIO, *, capacity: int = LINES_QUEUED) -> None:
        super().__init__()
        self.stream = stream
        self._capacity = capacity
        self._lines: deque[str] = deque()
        self._dropped = 0  # lines refused since the writer last took the queue
        self.dropped_total = 0
        self._writing = False
        self._awake = False  # the writer was woken and has not gone back to wait for lines since
        self._hurry = False  # a flush waits: write without lingering
        self._closed = False
        self._changed = threading.Condition()
        self._writer = threading.Thread(target=self._write_lines, name="log-writer", daemon=True)
        self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # logging's own convention: report it, never raise into the caller
            self.handleError(record)
            return
        with self._changed:
            if self._closed:  # nothing writes any more (the note included)
                self.dropped_total += 1
                return
            if len(self._lines) >= self._capacity:
                self._dropped += 1
                self.dropped_total += 1
                return
            self._lines.append(line)
            if not self._awake:  # only a writer waiting for lines needs waking (see the module's doc)
                self._awake = True
                self._changed.notify_all()

    def flush(self, timeout: float = FLUSH_TIMEOUT_SECONDS) -> None:
        """Wait (at most ``timeout`` seconds) until every queued line is written and the stream flushed."""
        with self._changed:
            if self._lines or self._dropped or self._writing:
                self._hurry = True
                self._changed.notify_all()
            self._changed.wait_for(lambda: not (self._lines or self._dropped or self._writing), timeout)

    def close(self) -> None:
        self.flush()
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._writer.join(FLUSH_TIMEOUT_SECONDS)
        super().close()

    def _write_lines(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._lines or self._dropped or self._closed)
                self._changed.wait_for(lambda: self._hurry or self._closed, LINGER_SECONDS)
                if self._closed and not (self._lines or self._dropped):
                    return
                lines, dropped = list(self._lines), self._dropped
                self._lines.clear()
                self._dropped = 0
                self._writing = True
                self._hurry = False
            try:
                if dropped:
                    lines.append(self._dropped_note(dropped))
                self.stream.write("\n".join(lines) + "\n")
                self.stream.flush()
            except Exception:  # a broken stream: nowhere left to say so but logging's own hook
                self.handleError(logging.makeLogRecord({"msg": "log stream write failed"}))
            finally:
                with self._changed:
                    self._writing = False
                    if not (self._lines or self._dropped):
                        self._awake = False  # back to waiting: the next line wakes it
                    self._changed.notify_all()

    def _dropped_note(self, dropped: int) -> str:
        record = logging.LogRecord(
            __name__, logging.WARNING, __file__, 0, "log lines dropped: the log stream did not keep up", None, None
        )
        record.dropped = dropped
        record.queued_at_most = self._capacity
        return self.format(record)
