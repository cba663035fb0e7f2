"""The per-target series are written by the service itself (prometheus-client's general path costs ~15 µs
a sample): the text must be what prometheus-client writes for the same families, in both formats.

The oracle is prometheus-client: the families are built here from what the test told the service, with
its ``GaugeMetricFamily`` / ``CounterMetricFamily``, and rendered by its ``generate_latest``."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics import exposition as openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

from autoscaler.service.telemetry.metrics import ServiceMetrics
from autoscaler.service.telemetry.metrics_targets import LIMIT_REASONS

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
NOW = 1_800_000_123.25


@dataclass
class Told:
    """What the test tells the service about one target."""

    namespace: str
    name: str
    replicas: tuple[int | None, int | None, int | None] = (2, 3, 3)
    limited: str | None = None
    metrics: list[tuple[str, float | None, float | None]] = field(default_factory=list)
    conditions: dict[str, bool] = field(default_factory=dict)
    scaled: list[str] = field(default_factory=list)  # directions of scale writes, in order
    backoff: dict[str, float] = field(default_factory=dict)
    synced: bool = True
    pause: tuple[str, float] | None = None  # (mode, since) while paused
    sync_period: float | None = None  # how often it syncs (spec.syncPeriodSeconds, else the service's)


def tell(metrics: ServiceMetrics, target: Told) -> None:
    ns, name = target.namespace, target.name
    current, proposal, final = target.replicas
    metrics.set_target(
        ns, name, current, proposal, final, target.limited, target.metrics, target.pause, target.sync_period
    )
    metrics.set_target_conditions(ns, name, dict(target.conditions))
    for direction in target.scaled:
        metrics.count_scale_event(ns, name, direction)
    for path, seconds in target.backoff.items():
        metrics.set_write_backoff(ns, name, path, seconds)
    if target.synced:
        metrics.observe_reconcile(ns, name, 0.01, "unchanged")


class Families:
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families


def oracle(targets: list[Told], *, openmetrics_format: bool) -> str:
    """prometheus-client's text for the per-target families of ``targets``."""
    labels = ["namespace", "name"]
    replica_families = [
        GaugeMetricFamily(name, documentation, labels=labels)
        for name, documentation in (
            ("autoscaler_target_current_replicas", "Replicas of the scale target when it was last synced."),
            ("autoscaler_target_desired_replicas", "Replicas the metrics ask for, before stabilization and limits."),
            ("autoscaler_target_final_replicas", "Replicas decided after stabilization, behavior and min/max."),
        )
    ]
    limited = GaugeMetricFamily(
        "autoscaler_target_limited",
        "1 for the reason limiting the decision now, 0 for the others (a state set).",
        labels=[*labels, "reason"],
    )
    values = GaugeMetricFamily(
        "autoscaler_target_metric_value",
        "Current value of each metric of a target (absent while missing).",
        labels=[*labels, "metric"],
    )
    goals = GaugeMetricFamily(
        "autoscaler_target_metric_target", "Target value of each metric.", labels=[*labels, "metric"]
    )
    events = CounterMetricFamily(
        "autoscaler_target_scale_events", "Scale writes by direction.", labels=[*labels, "direction"]
    )
    conditions = GaugeMetricFamily(
        "autoscaler_target_condition",
        "Status conditions: 1 True, 0 False, absent when Unknown.",
        labels=[*labels, "condition"],
    )
    last_sync = GaugeMetricFamily(
        "autoscaler_target_last_sync_timestamp_seconds",
        "Unix time of the target's last successful sync.",
        labels=labels,
    )
    backoff = GaugeMetricFamily(
        "autoscaler_target_write_backoff_seconds",
        "The delay before the next write of a target whose writes keep failing "
        "(path horizontal: scale and status; vpa); 0 once a write succeeds.",
        labels=[*labels, "path"],
    )
    fallback = GaugeMetricFamily(
        "autoscaler_target_fallback_active",
        "1 while a failed metric of a target with spec.fallback stands for its fallback replicas, else 0.",
        labels=labels,
    )
    paused = GaugeMetricFamily(
        "autoscaler_target_paused",
        "1 while a target is paused, with its mode (absent while not paused).",
        labels=[*labels, "mode"],
    )
    paused_since = GaugeMetricFamily(
        "autoscaler_target_paused_since_seconds", "Unix time a paused target became paused.", labels=labels
    )
    sync_period = GaugeMetricFamily(
        "autoscaler_target_sync_period_seconds",
        "How often the target syncs: its spec.syncPeriodSeconds, else the service's sync.periodSeconds.",
        labels=labels,
    )
    for t in sorted(targets, key=lambda t: (t.namespace, t.name)):
        pair = [t.namespace, t.name]
        if t.pause is not None:
            paused.add_metric([*pair, t.pause[0]], 1)
            paused_since.add_metric(pair, t.pause[1])
        if t.sync_period is not None:
            sync_period.add_metric(pair, t.sync_period)
        for family, replicas in zip(replica_families, t.replicas, strict=True):
            if replicas is not None:
                family.add_metric(pair, replicas)
        reasons = list(LIMIT_REASONS)
        if t.limited and t.limited not in reasons and t.limited != "DesiredWithinRange":
            reasons.append(t.limited)
        for reason in reasons:
            limited.add_metric([*pair, reason], 1 if reason == t.limited else 0)
        for metric, value, goal in t.metrics:
            if value is not None:
                values.add_metric([*pair, metric], value)
            if goal is not None:
                goals.add_metric([*pair, metric], goal)
        for direction in dict.fromkeys(t.scaled):
            events.add_metric([*pair, direction], t.scaled.count(direction))
        for condition, status in t.conditions.items():
            conditions.add_metric([*pair, condition], 1 if status else 0)
        if t.synced:
            last_sync.add_metric(pair, NOW)
        for path, seconds in t.backoff.items():
            backoff.add_metric([*pair, path], seconds)
        if "Fallback" in t.conditions:
            fallback.add_metric(pair, 1 if t.conditions["Fallback"] else 0)
    per_target = [*replica_families, limited, values, goals, events, conditions, last_sync, backoff, fallback]
    families = Families([*per_target, paused, paused_since, sync_period])
    registry = CollectorRegistry(auto_describe=False)
    registry.register(families)  # type: ignore[arg-type]
    if openmetrics_format:
        return openmetrics.generate_latest(registry).decode().removesuffix("# EOF\n")
    return generate_latest(registry).decode()


def per_target_section(metrics: ServiceMetrics, accept: str = "") -> str:
    body = metrics.exposition(accept)[0].decode()
    return body[body.index("# HELP autoscaler_target_current_replicas") :].removesuffix("# EOF\n")


TARGETS = [
    Told("shop", "web", limited="ScaleUpLimit", metrics=[("cpu", 61.0, 60.0), ("rps", None, 10.5)],
         conditions={"AbleToScale": True, "ScalingActive": True, "ScalingLimited": True, "Fallback": True},
         scaled=["up", "up", "down"], sync_period=15.0),
    Told("shop", "api", replicas=(1_500_000, None, 12), limited="SomethingNew",
         metrics=[('qu"o\\te\nd', 0.000012, 1e21)], backoff={"horizontal": 8.0, "vpa": 0.0}, synced=False,
         pause=("scaleIn", 1_800_000_000.5), sync_period=3600),
    Told("a-ns", "z", replicas=(None, None, None), conditions={"ScalingActive": False, "Fallback": False}),
]  # fmt: skip


def new_metrics() -> ServiceMetrics:
    return ServiceMetrics(process_metrics=False, wall_clock=lambda: NOW)


def test_the_per_target_text_is_prometheus_clients_in_both_formats() -> None:
    metrics = new_metrics()
    for target in TARGETS:
        tell(metrics, target)
    assert per_target_section(metrics) == oracle(TARGETS, openmetrics_format=False)
    assert per_target_section(metrics, OPENMETRICS) == oracle(TARGETS, openmetrics_format=True)


def test_an_openmetrics_scrape_parses_whole_and_ends_once() -> None:
    metrics = new_metrics()
    for target in TARGETS:
        tell(metrics, target)
    body, content_type = metrics.exposition(OPENMETRICS)
    text = body.decode()
    assert content_type.startswith("application/openmetrics-text")
    assert text.endswith("# EOF\n") and text.count("# EOF") == 1
    families = {family.name: family for family in parse_openmetrics(text)}  # raises on anything malformed
    events = families["autoscaler_target_scale_events"]
    assert {(s.labels["direction"], s.value) for s in events.samples if s.name.endswith("_total")} == {
        ("up", 2.0),
        ("down", 1.0),
    }
    assert "autoscaler_reconciles" in families  # the registry's own families are still there


def test_no_per_target_section_above_the_limit() -> None:
    metrics = ServiceMetrics(process_metrics=False, per_target_limit=2)
    for target in TARGETS:
        tell(metrics, target)
    assert "autoscaler_target_" not in metrics.render().decode()
    assert metrics.exposition(OPENMETRICS)[0].decode().endswith("# EOF\n")


label_text = st.text(min_size=1, max_size=20)
number = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, width=64),
)


@settings(max_examples=100, deadline=None)
@given(
    name=label_text,
    metric=label_text,
    value=number,
    goal=number,
    replicas=st.integers(min_value=0, max_value=10**8),
    reason=st.sampled_from([None, *LIMIT_REASONS, "DesiredWithinRange", 'odd "reason"']),
    backoff=st.floats(min_value=0, max_value=1e9),
    pause=st.one_of(st.none(), st.tuples(st.sampled_from(["paused", "replicas", "scaleIn", "scaleOut"]), number)),
    sync_period=st.one_of(st.none(), st.floats(min_value=1, max_value=3600)),
)
def test_any_values_render_as_prometheus_client_renders_them(
    name: str,
    metric: str,
    value: float,
    goal: float,
    replicas: int,
    reason: str | None,
    backoff: float,
    pause: tuple[str, float] | None,
    sync_period: float | None,
) -> None:
    target = Told(
        "ns",
        name,
        replicas=(replicas, replicas + 1, replicas),
        limited=reason,
        metrics=[(metric, value, goal)],
        backoff={"vpa": backoff},
        scaled=["up"],
        conditions={"ScalingLimited": reason is not None},
        pause=pause,
        sync_period=sync_period,
    )
    metrics = new_metrics()
    tell(metrics, target)
    assert per_target_section(metrics) == oracle([target], openmetrics_format=False)
    assert per_target_section(metrics, OPENMETRICS) == oracle([target], openmetrics_format=True)


def test_targets_limited_lists_the_known_reasons_then_the_others_by_name_whatever_the_targets_order() -> None:
    """The aggregates are counted from an unsorted snapshot of the targets (a scrape at 10,000 targets sorted
    their keys twice): the exposition's order must not follow the targets'."""
    texts = []
    for names in (("a", "b", "c"), ("c", "b", "a")):
        metrics = ServiceMetrics(process_metrics=False, per_target_limit=1)
        reasons = {"a": "ScaleUpStabilized", "b": "ScaleDownStabilized", "c": "TooManyReplicas"}
        for name in names:
            metrics.set_target("shop", name, 2, 3, 3, reasons[name], [("rps", 10.0, 5.0)])
        texts.append(
            [line for line in metrics.render().decode().splitlines() if line.startswith("autoscaler_targets_limited{")]
        )
    assert (
        texts[0]
        == texts[1]
        == [
            'autoscaler_targets_limited{reason="ScaleUpLimit"} 0.0',
            'autoscaler_targets_limited{reason="ScaleDownLimit"} 0.0',
            'autoscaler_targets_limited{reason="TooManyReplicas"} 1.0',
            'autoscaler_targets_limited{reason="TooFewReplicas"} 0.0',
            'autoscaler_targets_limited{reason="ScaleDownStabilized"} 1.0',
            'autoscaler_targets_limited{reason="ScaleUpStabilized"} 1.0',
        ]
    )
