"""The benchmark report's notes on what its figures depend on besides the service
(bench/servicebench/report.py ``environment_notes``): whether the RSS was measured after every target's decision
history was full, and whether the harness's own CPUs (Prometheus, the emulator) were saturated."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType

import pytest

from tests.bench_modules import servicebench


@dataclass
class Durations:
    """Prometheus' query durations (servicebench.samples.Histogram): their p99."""

    p99: float
    count: int = 100

    def quantile(self, q: float) -> float:
        assert q == 0.99
        return self.p99


@dataclass
class Window:
    """What the notes read of a steady window (servicebench.window.Window)."""

    seconds: float
    prometheus_cpu: float  # CPU seconds in the window
    harness_cpu: float
    query_duration: Durations = field(default_factory=lambda: Durations(1.9))

    def mcpu(self, cpu: float) -> float:
        return cpu / self.seconds * 1000


@pytest.fixture
def report() -> Iterator[ModuleType]:
    with servicebench("report") as module:
        yield module


def test_a_window_ending_before_the_histories_fill_says_the_rss_is_short(report: ModuleType) -> None:
    (short,) = report.environment_notes({"settle": 30.0}, Window(180.0, 18.0, 9.0))
    assert short.startswith("RSS measured 210 s after the first full pass") and "not yet" in short
    (full,) = report.environment_notes({"settle": 0.0}, Window(300.0, 30.0, 3.0))
    assert full.startswith("RSS measured 300 s after") and "not yet" not in full


def test_the_harness_cpus_are_called_saturated_from_nine_tenths_of_them_on(report: ModuleType) -> None:
    # 480 + 471 mCPU of one CPU: the failed 40-period run of the twentieth session.
    busy = report.environment_notes({"others_cpus": 1}, Window(600.0, 288.0, 282.6))[1]
    assert "951 mCPU used" in busy and "saturated" in busy
    calm = report.environment_notes({"others_cpus": 1}, Window(600.0, 175.8, 12.0))[1]
    assert "313 mCPU used" in calm and "saturated" not in calm
    assert "saturated" not in report.environment_notes({"others_cpus": 2}, Window(600.0, 288.0, 282.6))[1]
    assert len(report.environment_notes({}, Window(600.0, 288.0, 282.6))) == 1  # no CPUs known: no note


def test_answers_slower_than_the_services_deadline_are_named(report: ModuleType) -> None:
    slow = Window(300.0, 120.0, 86.4, Durations(8.2))  # the split shards' run of the twentieth session
    (*_, note) = report.environment_notes({"settle": 0.0}, slow)
    assert note.startswith("Prometheus' answers: p99 8.2 s, past the service's 5 s deadline")
    assert len(report.environment_notes({"query_deadline_s": 12.0}, slow)) == 1
    assert len(report.environment_notes({"query_deadline_s": 8.0}, slow)) == 2
    assert len(report.environment_notes({}, Window(300.0, 120.0, 86.4, Durations(4.9)))) == 1
