"""The service's log lines are written by a thread of their own (service/telemetry/log_writer.py): a stream that
blocks never blocks the code that logs, lines keep their order, and a stream that stays stuck costs
counted, announced lines instead of memory."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from typing import Any

import pytest
import structlog

from autoscaler.service.settings import LoggingSettings
from autoscaler.service.telemetry import log_writer
from autoscaler.service.telemetry.log_writer import LINES_QUEUED, ThreadedStreamHandler
from autoscaler.service.telemetry.logs import configure_logging, flush_logs, log_lines_dropped
from autoscaler.service.telemetry.metrics import ServiceMetrics


class BlockedStream(io.StringIO):
    """A stream whose writes wait until :attr:`open` is set, as a pipe nobody reads does."""

    def __init__(self) -> None:
        super().__init__()
        self.open = threading.Event()
        self.writes_started = threading.Event()

    def write(self, text: str) -> int:
        self.writes_started.set()
        self.open.wait()
        return super().write(text)


pytestmark = pytest.mark.usefixtures("restore_logging")


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def threaded_json_logging(stream: io.StringIO) -> structlog.stdlib.BoundLogger:
    configure_logging(LoggingSettings(format="json", level="info"), stream=stream, in_thread=True)
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger("autoscaler.test")
    return logger


def test_logging_returns_while_the_stream_is_blocked_and_every_line_follows_in_order() -> None:
    stream = BlockedStream()
    log = threaded_json_logging(stream)
    # If a line were written where it is logged, the first call would wait for the stream: release it
    # after a while, so that such a failure is a failed assertion, not a hung test.
    releaser = threading.Timer(5.0, stream.open.set)
    releaser.start()
    try:
        for index in range(100):
            with structlog.contextvars.bound_contextvars(target=f"t{index}"):
                log.info("decision", index=index)
        returned_blocked = not stream.open.is_set()
        assert stream.writes_started.wait(5.0)
    finally:
        stream.open.set()
        releaser.cancel()
    flush_logs()
    assert returned_blocked, "logging waited for the stream"
    written = lines(stream)
    assert [line["index"] for line in written] == list(range(100))
    assert [line["target"] for line in written] == [f"t{i}" for i in range(100)]  # the task's context, kept


def test_a_stuck_stream_costs_counted_lines_and_a_warning_where_they_went_missing() -> None:
    stream = BlockedStream()
    handler = ThreadedStreamHandler(stream, capacity=5)
    handler.setFormatter(logging.Formatter("%(message)s %(dropped)s"))
    record = lambda text: logging.makeLogRecord({"msg": text, "dropped": "-"})  # noqa: E731
    handler.emit(record("first"))
    assert stream.writes_started.wait(5.0)  # the writer holds "first" at the blocked stream
    for index in range(12):
        handler.emit(record(f"queued {index}"))
    stream.open.set()
    handler.flush()
    handler.emit(record("after"))
    handler.flush()
    written = stream.getvalue().splitlines()
    assert written[:6] == ["first -"] + [f"queued {i} -" for i in range(5)]
    assert written[6] == "log lines dropped: the log stream did not keep up 7"
    assert written[7:] == ["after -"] and handler.dropped_total == 7
    handler.close()


def test_flush_waits_for_the_lines_and_close_ends_the_thread() -> None:
    stream = io.StringIO()
    handler = ThreadedStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for index in range(1000):
        handler.emit(logging.makeLogRecord({"msg": f"line {index}"}))
    handler.flush()
    assert stream.getvalue().splitlines() == [f"line {i}" for i in range(1000)]
    handler.close()
    assert not handler._writer.is_alive()  # close joins the writer
    handler.emit(logging.makeLogRecord({"msg": "after close"}))  # refused quietly, counted
    assert "after close" not in stream.getvalue() and handler.dropped_total == 1
    started = time.monotonic()
    handler.flush(timeout=30.0)  # nothing is left to write: returns at once, not at its timeout
    assert time.monotonic() - started < 10.0


class CountedStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_lines_logged_a_little_apart_are_written_together() -> None:
    """A sync's lines come a few at a time, between the loop's other work: the writer lingers before it takes
    the queue, instead of being woken (and taking the interpreter lock) once a line."""
    stream = CountedStream()
    handler = ThreadedStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for index in range(10):
        handler.emit(logging.makeLogRecord({"msg": f"line {index}"}))
        time.sleep(0.001)
    handler.flush()
    assert stream.getvalue().splitlines() == [f"line {i}" for i in range(10)]
    assert stream.writes <= 3, stream.writes  # one write for the burst (woken once a line: ten)
    handler.close()


def test_a_flush_does_not_wait_for_the_writer_to_linger(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_writer, "LINGER_SECONDS", 60.0)
    stream = io.StringIO()
    handler = ThreadedStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.emit(logging.makeLogRecord({"msg": "a line"}))
    started = time.monotonic()
    handler.flush(timeout=30.0)
    assert stream.getvalue() == "a line\n"
    assert time.monotonic() - started < 20.0  # neither the lingering nor the flush's own timeout
    handler.close()


def test_the_service_metrics_count_the_lines_a_stuck_stream_dropped() -> None:
    stream = BlockedStream()
    log = threaded_json_logging(stream)
    metrics = ServiceMetrics(process_metrics=False)
    metrics.watch_log_lines_dropped(log_lines_dropped)
    try:
        log.info("first")  # taken by the writer, which then waits on the stream
        assert stream.writes_started.wait(5)
        for index in range(LINES_QUEUED + 25):
            log.info("decision", index=index)
        exposition = metrics.render().decode()
    finally:
        stream.open.set()
        flush_logs()
    assert "autoscaler_log_lines_dropped_total 25.0" in exposition.splitlines()
    assert log_lines_dropped() == 25
