"""What a backtest reports: replicas over time, scale events, time limited by each window or
policy, metric failures, and pod-seconds against the real workload. Built sync by sync with
bounded memory (change points, buckets, counters), then rendered as text or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autoscaler.core.behavior import Normalization
from autoscaler.core.decision import Decision
from autoscaler.core.explain import readable
from autoscaler.core.spec import PolicyType, TargetSpec
from autoscaler.values.durations import format_seconds
from autoscaler.values.timestamps import rfc3339_millis

# Bucket sizes for "replicas over time": the first that gives at most MAX_BUCKETS rows.
_BUCKET_SIZES = (60, 300, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
MAX_BUCKETS = 24
MAX_EVENTS_IN_TEXT = 40


@dataclass(frozen=True, slots=True)
class ScaleEventRecord:
    at: float
    before: int
    after: int
    reason: str
    limited_by: str | None


@dataclass(slots=True)
class Tally:
    """How many syncs (and so how long) something held, and the first message about it."""

    syncs: int = 0
    first_at: float | None = None
    message: str = ""


@dataclass(slots=True)
class Bucket:
    start: float
    low: int = 2**31
    high: int = 0
    total: int = 0
    count: int = 0
    real_total: int = 0
    real_count: int = 0


@dataclass(frozen=True, slots=True)
class Cost:
    """Pod-seconds: each sync's final count held until the next sync."""

    replay: float  # over every sync
    covered_syncs: int  # syncs at which the real replicas are known
    replay_covered: float  # the replay's pod-seconds at those syncs
    real_covered: float  # the real workload's

    @property
    def change(self) -> float | None:
        return (self.replay_covered - self.real_covered) / self.real_covered if self.real_covered else None


@dataclass(slots=True)
class Provisioning:
    """Replicas against what the metrics called for (:mod:`autoscaler.backtest.provisioning`): the integral
    of ``max(0, ideal − ready)`` over the syncs where the ideal is known, each sync held until the next."""

    under_pod_seconds: float = 0.0
    under_syncs: int = 0  # syncs with fewer pods serving than the metrics called for
    largest_shortfall: int = 0
    known_syncs: int = 0  # syncs where some metric gave a value (the ideal is known)
    ready_pod_seconds: float = 0.0  # the serving pods' integral, over every sync


@dataclass(slots=True)
class ForecastTally:
    """What the forecast did over the window (only for a spec with ``spec.prediction``)."""

    syncs: int = 0  # syncs with a forecast computed
    usable_syncs: int = 0  # syncs where it passed its guards
    decided_syncs: int = 0  # syncs where its floor was above the reactive proposal
    # Scale-downs the forecast caused: the sync scaled down where the same sync without the forecasts (same
    # state, same readings) would not have (the goal: none; a floor cannot lower a proposal).
    caused_scale_downs: int = 0
    ignored: dict[str, int] = field(default_factory=dict)  # guard reason → syncs
    errors: list[float] = field(default_factory=list)  # |forecast − actual| ÷ |actual| per matched point
    model: str = ""
    # Per forecast metric, each point of its forecast line within the window: (time, forecast, actual or None).
    lines: dict[str, list[tuple[float, float, float | None]]] = field(default_factory=dict)

    @property
    def mape(self) -> float | None:
        """The mean absolute percentage error of the forecasts whose time came within the window."""
        return 100 * sum(self.errors) / len(self.errors) if self.errors else None


@dataclass
class Report:
    label: str
    source: str
    namespace: str
    name: str
    workload: str
    start: float
    end: float
    step: float
    syncs: int
    initial: int
    final: int
    low: int
    high: int
    mean: float
    timeline: list[tuple[float, int]]
    events: list[ScaleEventRecord]
    limits: dict[tuple[str, str], Tally]
    failures: dict[str, Tally]
    undecided: Tally
    buckets: list[Bucket]
    cost: Cost
    real_known: bool
    notes: list[str] = field(default_factory=list)
    provisioning: Provisioning = field(default_factory=Provisioning)
    forecast: ForecastTally | None = None

    @property
    def replica_hours(self) -> float:
        """The integral of the replay's replicas (each sync's count held until the next), in hours."""
        return self.cost.replay / 3600

    def seconds(self, syncs: int) -> float:
        return syncs * self.step


class ReportBuilder:
    def __init__(
        self,
        label: str,
        source: str,
        namespace: str,
        name: str,
        spec: TargetSpec,
        start: float,
        end: float,
        step: float,
    ) -> None:
        self.spec = spec
        ref = spec.scale_target_ref
        self._report = Report(
            label,
            source,
            namespace,
            name,
            f"{ref.kind} {namespace}/{ref.name}",
            start,
            end,
            step,
            0,
            0,
            0,
            2**31,
            0,
            0.0,
            [],
            [],
            {},
            {},
            Tally(),
            [],
            Cost(0, 0, 0, 0),
            False,
        )
        span = max(end - start, step)
        self._bucket_size = next((s for s in _BUCKET_SIZES if span / s <= MAX_BUCKETS), _BUCKET_SIZES[-1])
        self._sum = 0
        self._replay = self._replay_covered = self._real_covered = 0.0
        self._covered = 0

    def forecast(self, tally: ForecastTally) -> None:
        """The run's spec predicts: the report carries what its forecasts did."""
        self._report.forecast = tally

    def add(
        self,
        at: float,
        decision: Decision,
        real_replicas: int | None,
        *,
        ideal: int | None = None,
        ready: int | None = None,
    ) -> None:
        """One sync: its decision, the real replicas then, and (when known) the replicas the metrics called
        for and the replay's pods serving at that sync (both held until the next sync)."""
        r = self._report
        if ready is not None:
            supply = r.provisioning
            supply.ready_pod_seconds += r.step * ready
            if ideal is not None:
                supply.known_syncs += 1
                short = ideal - ready
                if short > 0:
                    supply.under_syncs += 1
                    supply.under_pod_seconds += r.step * short
                    supply.largest_shortfall = max(supply.largest_shortfall, short)
        after = decision.replicas
        if r.syncs == 0:
            r.initial = decision.current_replicas
        if not r.timeline or r.timeline[-1][1] != after:
            r.timeline.append((at, after))
        r.syncs += 1
        r.final = after
        r.low, r.high = min(r.low, after), max(r.high, after)
        self._sum += after
        held = r.step * after
        self._replay += held
        if real_replicas is not None:
            r.real_known = True
            self._covered += 1
            self._replay_covered += held
            self._real_covered += r.step * real_replicas
        self._bucket(at, after, real_replicas)
        limited = None
        norm = decision.normalization
        if norm is not None:
            for key in limit_keys(norm, self.spec):
                _count(r.limits.setdefault(key, Tally()), at, "")
            limited = decision.limited_by
        for outcome in decision.metrics:
            if outcome.error is not None:
                _count(r.failures.setdefault(outcome.spec.name, Tally()), at, outcome.error)
        if decision.branch == "metrics-failed":
            _count(r.undecided, at, decision.error or "")
        if decision.scale:
            r.events.append(ScaleEventRecord(at, decision.current_replicas, after, decision.rescale_reason, limited))

    def _bucket(self, at: float, replicas: int, real: int | None) -> None:
        # In whole milliseconds, as the sync grid is: ``at`` is a grid time, and the grid rounds --from to the
        # millisecond, so in float seconds the first sync can fall a hair before ``start`` (one bucket early).
        offset_ms = round(at * 1000) - round(self._report.start * 1000)
        index = max(0, offset_ms // round(self._bucket_size * 1000))
        start = self._report.start + index * self._bucket_size
        buckets = self._report.buckets
        if not buckets or buckets[-1].start != start:
            buckets.append(Bucket(start))
        bucket = buckets[-1]
        bucket.low, bucket.high = min(bucket.low, replicas), max(bucket.high, replicas)
        bucket.total += replicas
        bucket.count += 1
        if real is not None:
            bucket.real_total += real
            bucket.real_count += 1

    def build(self, notes: list[str]) -> Report:
        r = self._report
        r.mean = self._sum / r.syncs if r.syncs else 0.0
        if not r.syncs:
            r.low = 0
        r.cost = Cost(self._replay, self._covered, self._replay_covered, self._real_covered)
        r.notes = list(notes)
        return r


def _count(tally: Tally, at: float, message: str) -> None:
    if tally.syncs == 0:
        tally.first_at, tally.message = at, message
    tally.syncs += 1


def limit_keys(norm: Normalization, spec: TargetSpec) -> list[tuple[str, str]]:
    """The windows and limits that changed this sync's proposal, each with what it was."""
    keys = []
    if norm.stabilized != norm.proposal:
        window = norm.down_window if norm.able_reason == "ScaleDownStabilized" else norm.up_window
        keys.append((norm.able_reason, f"{window or 0:g}s window"))
    if norm.limited:
        keys.append((norm.limit_reason, _limit_detail(norm, spec)))
    return keys


def _limit_detail(norm: Normalization, spec: TargetSpec) -> str:
    reason = norm.limit_reason
    if reason == "TooManyReplicas":
        return f"maxReplicas {spec.max_replicas}"
    if reason == "TooFewReplicas":
        return f"minReplicas {spec.min_replicas}"
    rate = norm.rate_limit
    if rate is None:
        return ""
    if rate.select_policy is None:
        return "max(2 × current, 4): no behavior"
    if not rate.policies:
        return "selectPolicy Disabled"
    for limit in rate.policies:
        if limit.allowed == rate.bound:
            p = limit.policy
            unit = "%" if p.type is PolicyType.PERCENT else " pods" if p.value != 1 else " pod"
            return f"{p.value}{unit} per {p.period_seconds}s"
    return "no change allowed in the policies' periods"


# -- rendering ------------------------------------------------------------------------------------


def report_json(report: Report) -> dict[str, Any]:
    cost = report.cost
    return {
        "label": report.label,
        "target": {
            "file": report.source,
            "namespace": report.namespace,
            "name": report.name,
            "workload": report.workload,
        },
        "from": rfc3339_millis(report.start),
        "to": rfc3339_millis(report.end),
        "stepSeconds": report.step,
        "syncs": report.syncs,
        "replicas": {
            "initial": report.initial,
            "final": report.final,
            "min": report.low,
            "max": report.high,
            "mean": round(report.mean, 3),
        },
        "timeline": [{"at": rfc3339_millis(at), "replicas": n} for at, n in report.timeline],
        "scaleEvents": [
            {"at": rfc3339_millis(e.at), "from": e.before, "to": e.after, "reason": e.reason, "limitedBy": e.limited_by}
            for e in report.events
        ],
        "limited": [
            {
                "reason": reason,
                "detail": detail,
                "syncs": t.syncs,
                "seconds": report.seconds(t.syncs),
                "first": rfc3339_millis(t.first_at or report.start),
            }
            for (reason, detail), t in sorted(report.limits.items(), key=lambda kv: -kv[1].syncs)
        ],
        "metricFailures": [
            {
                "metric": name,
                "syncs": t.syncs,
                "seconds": report.seconds(t.syncs),
                "first": rfc3339_millis(t.first_at or report.start),
                "message": t.message,
            }
            for name, t in report.failures.items()
        ],
        "undecidedSyncs": report.undecided.syncs,
        "cost": {
            "replayPodSeconds": cost.replay,
            "comparedSyncs": cost.covered_syncs,
            "replayPodSecondsCompared": cost.replay_covered if report.real_known else None,
            "realPodSecondsCompared": cost.real_covered if report.real_known else None,
            "change": round(cost.change, 6) if cost.change is not None else None,
        },
        "provisioning": provisioning_json(report),
        "forecast": forecast_json(report.forecast),
        "buckets": [
            {
                "from": rfc3339_millis(b.start),
                "min": b.low,
                "mean": round(b.total / b.count, 3),
                "max": b.high,
                "realMean": round(b.real_total / b.real_count, 3) if b.real_count else None,
            }
            for b in report.buckets
        ],
        "notes": report.notes,
    }


def provisioning_json(report: Report) -> dict[str, Any]:
    supply = report.provisioning
    return {
        "underProvisionedPodSeconds": supply.under_pod_seconds,
        "underProvisionedSyncs": supply.under_syncs,
        "largestShortfall": supply.largest_shortfall,
        "idealKnownSyncs": supply.known_syncs,
        "replicaHours": round(report.replica_hours, 6),
        "readyPodSeconds": supply.ready_pod_seconds,
    }


def forecast_json(tally: ForecastTally | None) -> dict[str, Any] | None:
    if tally is None:
        return None
    mape = tally.mape
    return {
        "model": tally.model,
        "syncs": tally.syncs,
        "usableSyncs": tally.usable_syncs,
        "decidedSyncs": tally.decided_syncs,
        "scaleDownsCausedByForecast": tally.caused_scale_downs,
        "ignored": [
            {"reason": reason, "syncs": n} for reason, n in sorted(tally.ignored.items(), key=lambda kv: -kv[1])
        ],
        "mapePercent": round(mape, 3) if mape is not None else None,
        "comparedPoints": len(tally.errors),
        "lines": {
            metric: [{"at": rfc3339_millis(at), "forecast": value, "actual": actual} for at, value, actual in points]
            for metric, points in tally.lines.items()
        },
    }


def _share(report: Report, syncs: int) -> str:
    return f"{format_seconds(report.seconds(syncs)):>8}  {100 * syncs / report.syncs:5.1f} %" if report.syncs else ""


def _hours(pod_seconds: float) -> str:
    return f"{pod_seconds:,.0f} pod-seconds ({pod_seconds / 3600:,.1f} pod-hours)"


def render_text(report: Report) -> str:
    """The readable summary."""
    r = report
    lines = [
        f"Backtest of {r.namespace}/{r.name} ({r.workload}) from {r.source}",
        f"  {rfc3339_millis(r.start)} → {rfc3339_millis(r.end)}, a sync every {format_seconds(r.step)}: "
        f"{r.syncs:,} syncs",
        "",
    ]
    lines.append(
        f"Replicas: {r.initial} at the start, {r.final} at the end; min {r.low}, max {r.high}, mean {r.mean:.2f}"
    )
    ups = sum(1 for e in r.events if e.after > e.before)
    lines.append(f"Scale events: {len(r.events)} ({ups} up, {len(r.events) - ups} down)")
    for event in r.events[:MAX_EVENTS_IN_TEXT]:
        limited = f"  [limited: {event.limited_by}]" if event.limited_by else ""
        lines.append(
            f"  {rfc3339_millis(event.at)}  {event.before:>4} → {event.after:<4} {readable(event.reason)}{limited}"
        )
    if len(r.events) > MAX_EVENTS_IN_TEXT:
        lines.append(f"  … {len(r.events) - MAX_EVENTS_IN_TEXT} more (--output json lists them all)")
    lines.append("")
    lines.append("Time a window or limit changed the proposal:")
    if not r.limits:
        lines.append("  none")
    for (reason, detail), tally in sorted(r.limits.items(), key=lambda kv: -kv[1].syncs):
        lines.append(f"  {reason + (f' ({detail})' if detail else ''):<52} {_share(r, tally.syncs)}")
    if r.failures or r.undecided.syncs:
        lines.append("")
        lines.append("Metrics that could not be computed:")
        for name, tally in r.failures.items():
            lines.append(f"  {name:<52} {_share(r, tally.syncs)}")
            lines.append(f"    first at {rfc3339_millis(tally.first_at or r.start)}: {readable(tally.message)}")
        if r.undecided.syncs:
            lines.append(f"  {'no usable metric (no decision)':<52} {_share(r, r.undecided.syncs)}")
    lines.append("")
    cost = r.cost
    lines.append("Cost:")
    lines.append(f"  replay  {_hours(cost.replay)}")
    if r.real_known:
        covered = f" at {cost.covered_syncs:,} of {r.syncs:,} syncs" if cost.covered_syncs != r.syncs else ""
        lines.append(f"  real    {_hours(cost.real_covered)}{covered}")
        if covered:
            lines.append(f"  replay  {_hours(cost.replay_covered)} at the same syncs")
        if cost.change is not None:
            lines.append(f"  change  {100 * cost.change:+.1f} % against the real workload")
    else:
        lines.append("  real    unknown (no replicas series for the workload): no comparison")
    lines.append("")
    lines.extend(provisioning_lines(r))
    lines.append("")
    lines.append(f"Replicas over time (per {format_seconds(_bucket_size(r))}):")
    lines.append(f"  {'from':<21} {'min':>5} {'mean':>7} {'max':>5}  {'real mean':>9}")
    for b in r.buckets:
        real = f"{b.real_total / b.real_count:9.2f}" if b.real_count else f"{'-':>9}"
        lines.append(f"  {rfc3339_millis(b.start):<21} {b.low:>5} {b.total / b.count:>7.2f} {b.high:>5}  {real}")
    if r.notes:
        lines.append("")
        lines.append("Notes on the history:")
        lines.extend(f"  - {note}" for note in r.notes)
    return "\n".join(lines)


def provisioning_lines(report: Report) -> list[str]:
    """The under-provisioning, replica-hours and forecast lines of the text report."""
    supply = report.provisioning
    lines = ["Provisioning (ideal: what the metrics and targets called for; ready: the replay's serving pods):"]
    if supply.known_syncs:
        lines.append(
            f"  under-provisioned  {supply.under_pod_seconds:,.0f} pod-seconds at {supply.under_syncs:,} of "
            f"{supply.known_syncs:,} syncs (largest shortfall {supply.largest_shortfall})"
        )
    else:
        lines.append("  under-provisioned  unknown (no metric gave a value)")
    lines.append(f"  replica-hours      {report.replica_hours:,.1f}")
    tally = report.forecast
    if tally is not None:
        mape = tally.mape
        error = f"MAPE {mape:.1f} % over {len(tally.errors):,} points" if mape is not None else "MAPE unknown"
        lines.append(
            f"  forecast ({tally.model or 'none'})  {error}; usable at {tally.usable_syncs:,} of "
            f"{tally.syncs:,} syncs, decided at {tally.decided_syncs:,}, "
            f"scale-downs it caused: {tally.caused_scale_downs}"
        )
        for reason, syncs in sorted(tally.ignored.items(), key=lambda kv: -kv[1]):
            lines.append(f"    ignored: {reason} ({syncs:,} syncs)")
    return lines


def _bucket_size(report: Report) -> float:
    if len(report.buckets) > 1:
        return report.buckets[1].start - report.buckets[0].start
    span = max(report.end - report.start, report.step)
    return next((s for s in _BUCKET_SIZES if span / s <= MAX_BUCKETS), _BUCKET_SIZES[-1])
