"""The replay: history in chunks → observations → the service's engine, sync by sync.

Each sync asks :class:`~autoscaler.prometheus.reader.MetricsReader` for the target's metrics at the
sync's time, exactly as the service does, but the reader's client answers from range queries
(:class:`~autoscaler.backtest.history.HistoryClient`). The sync is the service's own
(:func:`autoscaler.core.sync.sync`, every write taken as done), HVPA included: the history holds no
VPA, so HVPA reads no VPA recommendation, and the per-pod requests and limits it applies are the
simulated pods' from then on (:meth:`~autoscaler.backtest.model.SimulatedWorkload.pin`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from autoscaler.backtest.compare import Divergence
from autoscaler.backtest.forecasting import ForecastFeed
from autoscaler.backtest.hints import BACKTEST_HINTS, OptionHints
from autoscaler.backtest.history import (
    FetchStats,
    Grid,
    HistoryClient,
    Matrix,
    RangeQuerier,
)
from autoscaler.backtest.limits import DEFAULT_CHUNK_POINTS, MAX_POINTS_PER_QUERY
from autoscaler.backtest.model import SimulatedWorkload, is_live
from autoscaler.backtest.progress import Progress
from autoscaler.backtest.provisioning import ideal_replicas, ready_replicas
from autoscaler.backtest.report import Report, ReportBuilder
from autoscaler.backtest.target import BacktestTarget
from autoscaler.backtest.workload import RealWorkload, WorkloadHistory, restrict_to_pods, workload_queries
from autoscaler.core.hvpa.spec import Source
from autoscaler.core.observation import MetricReading, ResourceReading
from autoscaler.core.settings import ControllerSettings
from autoscaler.core.spec import MetricSourceType
from autoscaler.core.sync import SyncInputs, SyncState, sync
from autoscaler.core.sync_step import StepResult
from autoscaler.plot.records import ForecastPoint, StepRecord, step_record
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import MetricsReader
from autoscaler.prometheus.settings import PrometheusSettings


class BacktestError(Exception):
    """The backtest cannot run or could not read its history; ``exit_code`` 2 for bad input."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class NoHistoryAtStart(BacktestError):
    """The workload's replicas at --from are nowhere in the history (bad input for ``backtest``, which can
    be told them; for ``convert --compare``, a target without recorded history, exit code 1)."""


@dataclass(frozen=True)
class BacktestOptions:
    start: float
    end: float
    step: float
    chunk_points: int = DEFAULT_CHUNK_POINTS
    max_points: int = MAX_POINTS_PER_QUERY
    pod_startup: float = 0.0
    initial_replicas: int | None = None
    selector: str | None = None
    pods_query: str | None = None
    replicas_query: str | None = None
    keep_records: bool = False  # keep one small record per sync (for plots)
    hints: OptionHints = BACKTEST_HINTS  # what its messages tell the user to do (the command's options)


# Called with each run's label and each sync's result (what ``simulate`` produces for a step) and
# what the workload really was then: for scripts and tests that want every step.
StepObserver = Callable[[str, StepResult, RealWorkload], None]


@dataclass
class RunResult:
    label: str
    target: BacktestTarget
    report: Report
    records: list[StepRecord] | None
    # With spec.prediction, per forecast metric: its history and its forecast line within the window.
    forecast_lines: dict[str, tuple[list[tuple[float, float]], list[tuple[float, float]]]] = field(default_factory=dict)


@dataclass
class BacktestResult:
    runs: list[RunResult]
    divergence: Divergence
    stats: FetchStats
    notes: list[str] = field(default_factory=list)


class Run:
    """One spec's replay: its own replica count, engine state, simulated pods and report."""

    def __init__(
        self,
        label: str,
        target: BacktestTarget,
        settings: ControllerSettings,
        options: BacktestOptions,
        selector: str,
        observer: StepObserver | None = None,
    ) -> None:
        self.label = label
        self.observer = observer
        self.target = target
        self.settings = settings
        self.selector = selector
        self.workload = SimulatedWorkload(f"{target.spec.scale_target_ref.name}-backtest-", options.pod_startup)
        self.state = SyncState()
        self.replicas: int | None = options.initial_replicas
        self.hints = options.hints
        self.report = ReportBuilder(
            label, target.source, target.namespace, target.name, target.spec, options.start, options.end, options.step
        )
        self.records: list[StepRecord] | None = [] if options.keep_records else None
        self.feed = _feed(target, options.step)
        if self.feed is not None:
            self.report.forecast(self.feed.tally)

    def step(self, real: RealWorkload, readings: Sequence[MetricReading], now: float) -> None:
        if self.replicas is None:
            self.replicas = _initial_replicas(real, self.hints)
        observation = self.workload.observe(real, readings, self.replicas, now, self.selector)
        # With spec.prediction, the forecasts as the service's cache would hand them to this sync.
        forecasts = self.feed.at(now) if self.feed is not None else None
        # The wall clock HVPA's maintenance windows read is the sync's own time (Unix seconds here).
        inputs = SyncInputs(observation=observation, clock=now, forecasts=forecasts)
        before = self.state
        outcome = sync(self.target.spec, inputs, before, self.settings, now)
        self.state = outcome.state
        decision = outcome.decision
        if outcome.hvpa is not None and outcome.hvpa.applied:
            self.workload.pin(outcome.hvpa.requests, outcome.hvpa.limits)
        ideal = ideal_replicas(self.target.spec, observation, decision)
        ready = ready_replicas(observation)
        self.report.add(now, decision, real.replicas, ideal=ideal, ready=ready)
        points: tuple[ForecastPoint, ...] = ()
        if self.feed is not None and forecasts is not None:
            raised = decision.forecast is not None and decision.forecast.raised
            caused = False
            if decision.replicas < decision.current_replicas:
                # The same sync without the forecasts, from the same state (sync is pure): did it scale down too?
                plain = SyncInputs(observation=observation, clock=now)
                caused = sync(self.target.spec, plain, before, self.settings, now).decision.replicas >= (
                    decision.current_replicas
                )
            self.feed.score(forecasts, raised, caused)
            points = self.feed.points(decision.forecast, now)
        if self.records is not None:
            self.records.append(step_record(now, outcome, real_replicas=real.replicas, forecasts=points))
        if self.observer is not None:
            self.observer(self.label, StepResult(now, observation, outcome), real)
        self.replicas = decision.replicas


def _feed(target: BacktestTarget, sync_period: float) -> ForecastFeed | None:
    """The run's forecasts, when its spec predicts (``spec.prediction``)."""
    prediction = target.spec.prediction
    if prediction is None:
        return None
    composite = target.spec.composite is not None
    metrics = [m for m in target.spec.metrics if prediction.predicts(m, composite=composite)]
    return ForecastFeed(prediction, metrics, sync_period) if metrics else None


def _initial_replicas(real: RealWorkload, hints: OptionHints) -> int:
    for known in (real.spec_replicas, real.replicas):
        if known is not None:
            return known
    live = sum(1 for p in real.pods if is_live(p))
    if live:
        return live
    raise NoHistoryAtStart(
        "cannot tell how many replicas the workload had at --from: Prometheus has neither its "
        f"replicas (kube-state-metrics) nor any of its pods then; {hints.initial_replicas}",
        2,
    )


def _target_query(target: BacktestTarget, selector: str, pods: Sequence[str]) -> TargetQuery:
    return TargetQuery(
        namespace=target.namespace,
        name=target.name,
        scale_target=target.spec.scale_target_ref,
        selector=selector,
        pod_names=tuple(pods),
        metrics=target.spec.metrics,
    )


def plan_problems(
    reader: MetricsReader, target: BacktestTarget, selector: str | None, hints: OptionHints = BACKTEST_HINTS
) -> list[str]:
    """Why a metric of ``target`` cannot be read at all (bad template, a selector that is not known)."""
    problems = []
    with_selector = reader.planned_queries(_target_query(target, "backtest=selector", ()))
    without = reader.planned_queries(_target_query(target, "other=selector", ()))
    for spec, planned, other in zip(target.spec.metrics, with_selector, without, strict=True):
        if planned.problem is not None:
            problems.append(f'{target.source}: {spec.type.value} metric "{spec.name}": {planned.problem}')
        elif selector is None and planned.text != other.text:
            problems.append(
                f'{target.source}: {spec.type.value} metric "{spec.name}": its query uses <<selector>>, '
                f"which needs the scale's selector: {hints.selector}"
            )
    return problems


def _chunk_queries(
    reader: MetricsReader, targets: Sequence[BacktestTarget], selector: str, pod_set: str, pod_label: str
) -> dict[str, str]:
    """Metric queries to fetch per chunk (text the reader will ask → PromQL sent). Texts that depend on
    the pods (``<<pods>>``) are left out: the history client fetches them when they are asked."""
    queries: dict[str, str] = {}
    for target in targets:
        one = reader.planned_queries(_target_query(target, selector, ("a",)))
        two = reader.planned_queries(_target_query(target, selector, ("b",)))
        for planned, other in zip(one, two, strict=True):
            if planned.text is None or planned.text != other.text:
                continue
            queries[planned.text] = (
                restrict_to_pods(planned.text, pod_set, pod_label) if planned.per_pod else planned.text
            )
    return queries


def _usage_containers(rows: Sequence[Sequence[MetricReading]]) -> dict[str, set[str]]:
    containers: dict[str, set[str]] = {}
    for row in rows:
        for reading in row:
            if isinstance(reading, ResourceReading):
                for pod, usage in reading.pods.items():
                    containers.setdefault(pod, set()).update(usage.containers)
    return containers


async def run_backtest(
    client: RangeQuerier,
    prometheus: PrometheusSettings,
    settings: ControllerSettings,
    targets: Sequence[BacktestTarget],
    options: BacktestOptions,
    *,
    labels: Sequence[str] = (),
    progress: Progress | None = None,
    observer: StepObserver | None = None,
) -> BacktestResult:
    """Replay every target over the same history (the first target's workload) and report."""
    first = targets[0]
    ref = first.spec.scale_target_ref
    grid = Grid.between(options.start, options.end, options.step)
    history = HistoryClient(client, max_points=options.max_points)
    reader = MetricsReader(history, prometheus, batch=True)
    problems = [p for t in targets for p in plan_problems(reader, t, options.selector, options.hints)]
    if problems:
        raise BacktestError("\n".join(problems), 2)
    selector = options.selector or f"{ref.kind}/{ref.name}"  # the engine needs one; queries do not use it
    queries = workload_queries(
        first.namespace, ref, pods_query=options.pods_query, replicas_query=options.replicas_query
    )
    resources = [
        m.name
        for t in targets
        for m in t.spec.metrics
        if m.type in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE)
    ]
    workload = WorkloadHistory(queries, resources, f"{ref.kind} {first.namespace}/{ref.name}")
    chunk_queries: Mapping[str, str] = {
        **queries.texts(),
        **_chunk_queries(reader, targets, selector, queries.pods, prometheus.pod_label),
    }
    names = list(labels) or [t.source for t in targets]
    runs = [Run(name, t, settings, options, selector, observer) for name, t in zip(names, targets, strict=True)]
    for run in runs:
        if run.feed is not None:
            planned = reader.planned_queries(_target_query(run.target, selector, ()))
            texts = {m.name: p.text for m, p in zip(run.target.spec.metrics, planned, strict=True) if p.text}
            try:
                await run.feed.load(
                    client, texts, options.start, options.end, max_points=options.max_points, stats=history.stats
                )
            except PrometheusError as error:
                raise BacktestError(
                    f"reading the forecast's history failed: {error}", 2 if error.kind == "bad_query" else 1
                ) from None
    divergence = Divergence()
    chunks = list(grid.chunks(options.chunk_points))
    done = 0
    pending: asyncio.Task[dict[str, Matrix]] | None = asyncio.create_task(history.fetch(chunks[0], chunk_queries))
    try:
        for index, chunk in enumerate(chunks):
            assert pending is not None
            matrices = await pending
            # Fetch the next chunk while this one replays: at most two chunks are held at once.
            pending = (
                asyncio.create_task(history.fetch(chunks[index + 1], chunk_queries))
                if index + 1 < len(chunks)
                else None
            )
            history.use(chunk, matrices)
            del matrices
            for t_ms in chunk.times():
                now = t_ms / 1000
                pods = workload.pod_names(history, t_ms)
                rows = await reader.read([_target_query(r.target, selector, pods) for r in runs], now)
                if history.error is not None:
                    raise history.error
                real = workload.at(history, t_ms, pods, _usage_containers(rows))
                for run, row in zip(runs, rows, strict=True):
                    run.step(real, row, now)
                if len(runs) > 1:
                    divergence.add(now, [r.replicas or 0 for r in runs])
                done += 1
                if progress is not None:
                    progress.update(done, now)
    except PrometheusError as error:
        raise BacktestError(f"reading the history failed: {error}", 2 if error.kind == "bad_query" else 1) from None
    finally:
        if pending is not None:
            pending.cancel()
        if progress is not None:
            progress.finish()
    notes = workload.notes(f"{ref.kind} {first.namespace}/{ref.name}", options.hints.replicas_query)
    for target in targets:
        if target.spec.hvpa is not None and Source.VPA in target.spec.hvpa.sources:
            notes.append(
                f"{target.source}: HVPA is replayed without the VPA source (Prometheus does not keep a "
                "VPA's recommendations): it decides from the HPA source alone"
            )
    results = [
        RunResult(
            run.label,
            run.target,
            run.report.build(notes),
            run.records,
            run.feed.lines() if run.feed is not None else {},
        )
        for run in runs
    ]
    return BacktestResult(results, divergence, history.stats, notes)
