"""The demo's live timeline and its summary.

Decisions come from the service's own decision log line (docs/operations.md, "The decision line"),
caught by :class:`DecisionTap` as the service logs it; the cluster side (pods, readiness, the
Deployment's replicas) from the :class:`~autoscaler_sandbox.recorder.ClusterRecorder`; load and CPU
from the :class:`~autoscaler_sandbox.world.DemoWorld`. One line per decision that matters (a scale, a
limit that starts or ends, an error), and a heartbeat line when nothing happened for a while.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from autoscaler.core.explain import readable
from autoscaler_sandbox.recorder import ClusterRecorder, ReplicaChange
from autoscaler_sandbox.timescale import TimeScale, clock_text
from autoscaler_sandbox.world import DemoWorld

COLUMNS = "    time  phase    load    cpu  ready  replicas  decision"
# A decision held at a bound is at that bound: the bound as the target has it now (after a `kubectl patch`
# too), not as the demo created it.
BOUND_LIMITS = {"TooManyReplicas": "maxReplicas", "TooFewReplicas": "minReplicas"}


class DecisionTap(logging.Handler):
    """A logging handler that hands the service's ``decision`` events for one target to a callback.

    structlog passes its event dictionary to the standard library as the record's message, so the
    fields arrive as the service logged them, before any rendering."""

    def __init__(self, namespace: str, name: str, callback: Callable[[Mapping[str, Any]], None]) -> None:
        super().__init__(logging.INFO)
        self.target = (namespace, name)
        self.callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        event = record.msg
        if not isinstance(event, Mapping) or event.get("event") != "decision":
            return
        if (event.get("namespace"), event.get("name")) != self.target:
            return
        try:
            self.callback(event)
        except Exception:
            self.handleError(record)


@dataclass
class Summary:
    demo_seconds: float
    wall_seconds: float
    interrupted: bool
    decisions: int
    errors: int
    start_replicas: int | None
    final_replicas: int | None
    peak: tuple[int, float] | None
    scale_ups: int
    scale_downs: int
    limited: dict[str, float]
    pod_seconds: float
    ready_pod_seconds: float
    pods_started: int
    changes: list[ReplicaChange] = field(default_factory=list)  # the Deployment's replicas, as they changed
    lines: list[str] = field(default_factory=list)


class Timeline:
    def __init__(
        self,
        out: TextIO,
        scale: TimeScale,
        world: DemoWorld,
        recorder: ClusterRecorder,
        *,
        limits: Mapping[str, str],
        quiet: bool = False,
        heartbeat: float = 60.0,
    ) -> None:
        self.out = out
        self.scale = scale
        self.world = world
        self.recorder = recorder
        self.limits = limits  # reason → what it means in this demo
        self.quiet = quiet
        self.heartbeat = heartbeat
        self.decisions = 0
        self.errors = 0
        self.limited: dict[str, float] = {}
        self.start_replicas: int | None = None
        self._limit: str | None = None
        self._bound: int | None = None  # the replicas of the last decision held at a bound
        self._limit_since = 0.0
        self._shown_limit: str | None = None
        self._shown_bound: int | None = None
        self._shown_error: str | None = None
        self._last_line = 0.0
        self._last_proposal: int | None = None

    # -- output -----------------------------------------------------------------------------------

    def say(self, text: str = "", *, always: bool = False) -> None:
        if always or not self.quiet:
            print(text, file=self.out, flush=True)

    def begin(self) -> None:
        self.start_replicas = self.recorder.replicas
        self.say(COLUMNS)
        self._line("●", f"{self.recorder.replicas}", "start")

    def _line(self, mark: str, replicas: str, text: str) -> None:
        now = self.scale.now()
        self._last_line = now
        load = self.world.curve.load(now)
        cpu = self.world.utilization(load)
        ready = f"{self.recorder.ready}/{len(self.recorder.pods)}"
        cpu_text = f"{cpu:.0f}%" if cpu is not None else "–"
        self.say(
            f"{mark} {clock_text(now):>6}  {self.world.curve.phase(now):<6} {load:>5.0f}/s {cpu_text:>5}  "
            f"{ready:>5}  {replicas:<8}  {text}"
        )

    def _limit_text(self, reason: str) -> str:
        bound = BOUND_LIMITS.get(reason)
        meaning = f"{bound} {self._bound}" if bound and self._bound is not None else self.limits.get(reason)
        return f"{reason} ({meaning})" if meaning else reason

    # -- events -----------------------------------------------------------------------------------

    def on_decision(self, event: Mapping[str, Any]) -> None:
        """A decision line of the service: account for it, and print it if it matters."""
        if not self.scale.started:
            return  # the curve has not started: the service is settling on the start state
        now = self.scale.now()
        self.decisions += 1
        current = int(event.get("current_replicas") or 0)
        replicas = int(event.get("replicas") or 0)
        proposal = event.get("proposal")
        self._last_proposal = proposal if isinstance(proposal, int) else None
        limited = event.get("limited_by") or None
        error = event.get("error") or None
        if limited in BOUND_LIMITS:
            self._bound = replicas
        if error:
            self.errors += 1
        self._account_limit(limited, now)
        proposed = f", proposal {proposal}" if proposal is not None else ""
        if event.get("applied") is True and replicas != current:  # written, not just decided
            text = readable(str(event.get("reason") or ""))
            if limited:
                text += f"; limited by {self._limit_text(limited)}{proposed}"
            self._line("▲" if replicas > current else "▼", f"{current} → {replicas}", text)
        elif error != self._shown_error:
            self._line("!", str(current), f"error: {error}" if error else "metrics readable again")
        elif limited != self._shown_limit or (limited in BOUND_LIMITS and replicas != self._shown_bound):
            if limited:
                self._line("■", str(current), f"held by {self._limit_text(limited)}{proposed}")
            else:
                self._line("□", str(current), f"no longer limited{proposed}")
        self._shown_limit = limited
        self._shown_bound = replicas if limited in BOUND_LIMITS else None
        self._shown_error = error

    def _account_limit(self, limited: str | None, now: float) -> None:
        if limited == self._limit:
            return
        if self._limit is not None:
            self.limited[self._limit] = self.limited.get(self._limit, 0.0) + now - self._limit_since
        self._limit, self._limit_since = limited, now

    def tick(self) -> None:
        """Called often by the demo loop: a heartbeat line after a quiet stretch."""
        if self.scale.now() - self._last_line >= self.heartbeat:
            replicas = self.recorder.replicas
            held = f"held by {self._limit_text(self._limit)}" if self._limit else "steady"
            proposal = f", proposal {self._last_proposal}" if self._last_proposal is not None else ""
            self._line("·", str(replicas), f"{held}{proposal}")

    # -- the end ----------------------------------------------------------------------------------

    def finish(self, wall_seconds: float, *, interrupted: bool) -> Summary:
        now = self.scale.now()
        self._account_limit(None, now)
        self.recorder.finish()
        changes = self.recorder.changes
        summary = Summary(
            demo_seconds=now,
            wall_seconds=wall_seconds,
            interrupted=interrupted,
            decisions=self.decisions,
            errors=self.errors,
            start_replicas=self.start_replicas,
            final_replicas=self.recorder.replicas,
            peak=self.recorder.peak,
            scale_ups=sum(1 for c in changes if c.new > c.old),
            scale_downs=sum(1 for c in changes if c.new < c.old),
            limited=dict(self.limited),
            pod_seconds=self.recorder.pod_seconds,
            ready_pod_seconds=self.recorder.ready_pod_seconds,
            pods_started=self.recorder.pods_started,
            changes=list(changes),
        )
        summary.lines = summary_lines(summary)
        self.say(always=True)
        for line in summary.lines:
            self.say(line, always=True)
        return summary


def summary_lines(s: Summary) -> list[str]:
    how = "interrupted after" if s.interrupted else "ran"
    lines = [f"Summary: {how} {clock_text(s.demo_seconds)} of demo time in {s.wall_seconds:.0f} s"]
    peak_text = f"peak {s.peak[0]} at {clock_text(s.peak[1])}" if s.peak else "no peak"
    lines.append(f"  replicas       {s.start_replicas} at the start, {peak_text}, {s.final_replicas} at the end")
    events = s.scale_ups + s.scale_downs
    lines.append(f"  scale events   {events}: {s.scale_ups} up, {s.scale_downs} down; {s.pods_started} pods started")
    limited = " · ".join(
        f"{reason} {clock_text(seconds)}"
        for reason, seconds in sorted(s.limited.items(), key=lambda item: -item[1])
        if seconds > 0
    )
    lines.append(f"  limited        {limited or 'never'}")
    pod_line = f"  pod-seconds    {s.pod_seconds:,.0f} ({s.ready_pod_seconds:,.0f} of them ready)"
    peak = s.peak[0] if s.peak else 0
    fixed = peak * s.demo_seconds
    if fixed > 0 and s.pod_seconds < 0.995 * fixed:  # only when scaling made a difference
        pod_line += (
            f"; a fixed {peak} pods would have taken {fixed:,.0f} "
            f"(autoscaling saved {100 * (1 - s.pod_seconds / fixed):.0f}%)"
        )
    lines.append(pod_line)
    lines.append(f"  decisions      {s.decisions} ({s.errors} with an error)")
    return lines
