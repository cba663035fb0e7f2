"""Settings of ``autoscaler run``: a YAML file, overridden by environment variables, overridden by flags.

Every problem is reported at once with its path (``sync.periodSeconds: must be between 1 and 3600``)
and start-up stops; secrets are never echoed. The file's layout (all optional but ``prometheus.url``):

.. code-block:: yaml

    prometheus: {url: http://prometheus:9090, timeoutSeconds: 5}   # see docs/prometheus.md
    # prometheus.backends: {tenant-b: {url: …, headers: …, basicAuth: …}}: named backends a metric may name
    kubernetes: {kubeconfig: null, context: null, namespaces: [], watchSilenceSeconds: 90,
                 relists: {backoffStartSeconds: 0.8, backoffCapSeconds: 30, limit: 5, windowSeconds: 60}}
    sync: {periodSeconds: 15, jitter: 0.1, concurrency: 50, batchWindowSeconds: 1, clockSkewWarningSeconds: 10}
    controller: {tolerance: 0.1, cpuInitializationPeriodSeconds: 300,
                 initialReadinessDelaySeconds: 30, downscaleStabilizationWindowSeconds: 300}
    targets: null        # a YAML file of targets: standalone mode, without the CRD
    dryRun: false
    http: {address: 0.0.0.0, port: 8080, tokenFile: null}   # tokenFile: /api and /metrics need its token
    leaderElection: {enabled: true, leaseName: autoscaler, leaseNamespace: null,
                     leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2}
    sharding: {shard: null, labelKey: autoscaler.dev/shard}   # see docs/sharding.md
    logging: {format: auto, level: info}
    metrics: {perTargetSeriesLimit: 1000}
    backendHealth: {degradedShare: 0.5, minimumTargets: 10, writesPerPeriod: 100, recoveryPeriods: 2}
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.core.settings import ControllerSettings
from autoscaler.core.settings_parse import SERVICE_SUFFIX, read_controller_settings
from autoscaler.kube.relists import DEFAULT_RELIST_POLICY, RelistPolicy
from autoscaler.prometheus.backends import read_backends, split_backends
from autoscaler.prometheus.settings import PrometheusSettings, read_prometheus_settings
from autoscaler.service.backends.health import BackendHealthSettings, read_backend_health_settings
from autoscaler.service.cluster.relist_settings import read_relist_settings
from autoscaler.service.cluster.sharding import ShardingSettings, lease_name_problem, read_sharding_settings
from autoscaler.service.telemetry.metrics_targets import DEFAULT_PER_TARGET_LIMIT
from autoscaler.values.fields import ErrorList, FieldError, Obj, SpecError
from autoscaler.values.yaml_files import load_yaml_file, parse_yaml_text


@dataclass(frozen=True, slots=True)
class KubernetesSettings:
    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    # A watch that sent nothing (no event, no bookmark) for this long is presumed frozen and relisted,
    # once the server has shown it bookmarks idle watches (the API server does about once a minute).
    watch_silence_seconds: float = 90.0
    relists: RelistPolicy = DEFAULT_RELIST_POLICY  # the caches' backoff, and a relist too often (relist_settings.py)


@dataclass(frozen=True, slots=True)
class SyncSettings:
    period_seconds: float = 15.0
    jitter: float = 0.1  # each tick moves by up to ± this fraction of the period (per namespace)
    concurrency: int = 50  # syncs in progress at once, across all targets
    batch_window_seconds: float = 1.0  # metric reads arriving this close together share queries
    # A peer's clock (Prometheus') further than this from ours is reported: a warning, and a note on
    # failed metrics' messages (autoscaler_clock_skew_seconds always says how far).
    clock_skew_warning_seconds: float = 10.0


@dataclass(frozen=True, slots=True)
class HttpSettings:
    address: str = "0.0.0.0"  # every interface; 127.0.0.1 (or ::1): only this pod (and port-forwards)
    port: int = 8080
    token_file: str | None = None  # all but the probes ask for its token (service/http_auth.py)


@dataclass(frozen=True, slots=True)
class LeaderElectionSettings:
    enabled: bool = True
    lease_name: str = "autoscaler"
    lease_namespace: str | None = None  # default: the service's own namespace, else "default"
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0


@dataclass(frozen=True, slots=True)
class LoggingSettings:
    format: str = "auto"  # auto: console on a terminal, JSON otherwise
    level: str = "info"


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    # Per-target series while the service knows at most this many targets (0: never); aggregates always.
    per_target_series_limit: int = DEFAULT_PER_TARGET_LIMIT


@dataclass(frozen=True, slots=True)
class ServingSettings:
    """Which targets this instance serves and how: from a file (``targets``) or the CRD (its shard's), while
    it leads (``leaderElection``), writing nothing in a dry run (``dryRun``)."""

    targets_file: str | None = None
    dry_run: bool = False
    leader_election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    sharding: ShardingSettings = field(default_factory=ShardingSettings)


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """What the service shows of itself: its HTTP server (probes, /metrics, /api), its logs, its metrics."""

    http: HttpSettings = field(default_factory=HttpSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)


@dataclass(frozen=True)
class ServiceSettings:
    """The settings file's sections, grouped: ``targets``, ``dryRun``, ``leaderElection`` and ``sharding``
    are :class:`ServingSettings`; ``http``, ``logging`` and ``metrics`` :class:`TelemetrySettings`."""

    prometheus: PrometheusSettings
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    serving: ServingSettings = field(default_factory=ServingSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)
    backend_health: BackendHealthSettings = field(default_factory=BackendHealthSettings)
    # prometheus.backends: the named Prometheus backends besides the default one (prometheus/backends.py).
    prometheus_backends: Mapping[str, PrometheusSettings] = field(default_factory=dict)


# Environment variables and the settings path each one sets. Values are YAML scalars
# ("true", "15", "a,b" for lists).
ENVIRONMENT: Mapping[str, tuple[str, ...]] = {
    "AUTOSCALER_PROMETHEUS_URL": ("prometheus", "url"),
    "AUTOSCALER_PROMETHEUS_BEARER_TOKEN_FILE": ("prometheus", "bearerTokenFile"),
    "AUTOSCALER_PROMETHEUS_TIMEOUT_SECONDS": ("prometheus", "timeoutSeconds"),
    "AUTOSCALER_KUBECONFIG": ("kubernetes", "kubeconfig"),
    "AUTOSCALER_CONTEXT": ("kubernetes", "context"),
    "AUTOSCALER_NAMESPACES": ("kubernetes", "namespaces"),
    "AUTOSCALER_SYNC_PERIOD_SECONDS": ("sync", "periodSeconds"),
    "AUTOSCALER_SYNC_CONCURRENCY": ("sync", "concurrency"),
    "AUTOSCALER_TOLERANCE": ("controller", "tolerance"),
    "AUTOSCALER_TARGETS": ("targets",),
    "AUTOSCALER_DRY_RUN": ("dryRun",),
    "AUTOSCALER_HTTP_ADDRESS": ("http", "address"),
    "AUTOSCALER_HTTP_PORT": ("http", "port"),
    "AUTOSCALER_LEADER_ELECTION": ("leaderElection", "enabled"),
    "AUTOSCALER_LEASE_NAMESPACE": ("leaderElection", "leaseNamespace"),
    "AUTOSCALER_SHARD": ("sharding", "shard"),
    "AUTOSCALER_LOG_FORMAT": ("logging", "format"),
    "AUTOSCALER_LOG_LEVEL": ("logging", "level"),
}
_LIST_PATHS = {("kubernetes", "namespaces")}
# A DNS name: dot-separated labels of letters, digits and inner hyphens.
_HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*")
_TEXT_PATHS = {("sharding", "shard")}  # read as written: a shard named 1 is "1", not a number


def _scalar(text: str) -> Any:
    """Read an environment value as YAML would read a plain scalar (as text when YAML cannot read it)."""
    try:
        return parse_yaml_text(text, "environment") if text.strip() else None
    except SpecError:
        return text


def with_overrides(document: Mapping[str, Any], overrides: Mapping[tuple[str, ...], Any]) -> dict[str, Any]:
    """A copy of ``document`` with each path in ``overrides`` set (intermediate objects created)."""
    result: dict[str, Any] = _deep_copy(document)
    for path, value in overrides.items():
        node = result
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[path[-1]] = value
    return result


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def environment_overrides(environ: Mapping[str, str] | None = None) -> dict[tuple[str, ...], Any]:
    environ = os.environ if environ is None else environ
    overrides: dict[tuple[str, ...], Any] = {}
    for name, path in ENVIRONMENT.items():
        if name in environ:
            raw = environ[name]
            if path in _LIST_PATHS:
                overrides[path] = [p.strip() for p in raw.split(",") if p.strip()]
            else:
                overrides[path] = raw if path in _TEXT_PATHS else _scalar(raw)
    return overrides


def parse_service_settings(document: object) -> ServiceSettings:
    """Validate the merged settings document; raise SpecError listing every problem."""
    errors = ErrorList()
    settings = _read(document, errors)
    errors.raise_if_any()
    assert settings is not None
    return settings


def _read(document: object, errors: ErrorList) -> ServiceSettings | None:
    root = Obj.of(document if document is not None else {}, "", errors)
    if root is None:
        return None
    prometheus = None
    backends: dict[str, PrometheusSettings] | None = {}
    if root.has("prometheus"):
        default, named = split_backends(root.raw("prometheus"))
        prometheus = read_prometheus_settings(default, "prometheus", errors)
        if named is not None:
            backends = read_backends(named, "prometheus.backends", errors)
    else:
        root.raw("prometheus")
        errors.add(
            "prometheus.url",
            "Required value: where Prometheus answers (or set AUTOSCALER_PROMETHEUS_URL or --prometheus-url)",
        )
    kubernetes = _kubernetes(root.obj("kubernetes"))
    sync = _sync(root.obj("sync"))
    controller = read_controller_settings(root.obj("controller"), suffix=SERVICE_SUFFIX)
    targets = root.string("targets", non_empty=True)
    dry_run = root.boolean("dryRun", default=False)
    http = _http(root.obj("http"))
    election = _leader_election(root.obj("leaderElection"))
    logging = _logging(root.obj("logging"))
    metrics = _metrics(root.obj("metrics"))
    sharding = read_sharding_settings(root.obj("sharding"))
    backend_health = read_backend_health_settings(root.obj("backendHealth"))
    if sharding is not None and election is not None and election.enabled:
        problem = lease_name_problem(sharding, election.lease_name)
        if problem:
            errors.add("sharding.shard", problem)
    root.finish()
    if errors or prometheus is None:
        return None
    assert None not in (kubernetes, sync, controller, http, election, logging, metrics, sharding, backend_health)
    return ServiceSettings(
        prometheus,
        kubernetes=kubernetes or KubernetesSettings(),
        sync=sync or SyncSettings(),
        controller=controller or ControllerSettings(),
        serving=ServingSettings(
            targets, bool(dry_run), election or LeaderElectionSettings(), sharding or ShardingSettings()
        ),
        telemetry=TelemetrySettings(http or HttpSettings(), logging or LoggingSettings(), metrics or MetricsSettings()),
        backend_health=backend_health or BackendHealthSettings(),
        prometheus_backends=backends or {},
    )


def _kubernetes(obj: Obj | None) -> KubernetesSettings | None:
    if obj is None:
        return KubernetesSettings()
    kubeconfig = obj.string("kubeconfig", non_empty=True)
    context = obj.string("context", non_empty=True)
    namespaces: list[str] = []
    for path, value in obj.items("namespaces"):
        if isinstance(value, str) and value:
            namespaces.append(value)
        else:
            obj.errors.add(path, "must be a namespace name")
    silence = obj.number(
        "watchSilenceSeconds", default=KubernetesSettings().watch_silence_seconds, minimum=1, maximum=3600
    )
    relists = read_relist_settings(obj.obj("relists"))
    obj.finish()
    if silence is None or relists is None:
        return None
    return KubernetesSettings(kubeconfig, context, tuple(namespaces), silence, relists)


def _sync(obj: Obj | None) -> SyncSettings | None:
    if obj is None:
        return SyncSettings()
    default = SyncSettings()
    period = obj.number("periodSeconds", default=default.period_seconds, minimum=1, maximum=3600)
    jitter = obj.number("jitter", default=default.jitter, minimum=0, maximum=0.5)
    concurrency = obj.integer("concurrency", default=default.concurrency, minimum=1, maximum=10_000)
    batch = obj.number("batchWindowSeconds", default=default.batch_window_seconds, minimum=0, maximum=5)
    skew = obj.number("clockSkewWarningSeconds", default=default.clock_skew_warning_seconds, minimum=1, maximum=86400)
    obj.finish()
    if period is None or jitter is None or concurrency is None or batch is None or skew is None:
        return None
    return SyncSettings(period, jitter, concurrency, batch, skew)


def _http(obj: Obj | None) -> HttpSettings | None:
    if obj is None:
        return HttpSettings()
    address = obj.string("address", default="0.0.0.0", non_empty=True)
    if address is not None and not _listen_address(address):
        obj.error("address", f"must be an IP address (0.0.0.0, 127.0.0.1, ::, ::1) or a host name, not {address!r}")
        address = None
    port = obj.integer("port", default=8080, minimum=0, maximum=65535)
    token_file = obj.string("tokenFile", non_empty=True)
    obj.finish()
    if address is None or port is None:
        return None
    return HttpSettings(address, port, token_file)


def _listen_address(text: str) -> bool:
    """Whether the HTTP server can be told to listen on ``text``: an IP address or a host name."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return _HOST_NAME.fullmatch(text) is not None
    return True


def _leader_election(obj: Obj | None) -> LeaderElectionSettings | None:
    default = LeaderElectionSettings()
    if obj is None:
        return default
    enabled = obj.boolean("enabled", default=True)
    name = obj.string("leaseName", default=default.lease_name, non_empty=True)
    namespace = obj.string("leaseNamespace", non_empty=True)
    duration = obj.number("leaseDurationSeconds", default=default.lease_duration_seconds, minimum=1, maximum=600)
    renew = obj.number("renewDeadlineSeconds", default=default.renew_deadline_seconds, minimum=1, maximum=600)
    retry = obj.number("retryPeriodSeconds", default=default.retry_period_seconds, minimum=0.1, maximum=60)
    if duration is not None and renew is not None and renew >= duration:
        obj.error("renewDeadlineSeconds", "must be less than leaseDurationSeconds")
    if renew is not None and retry is not None and retry >= renew:
        obj.error("retryPeriodSeconds", "must be less than renewDeadlineSeconds")
    obj.finish()
    if None in (enabled, name, duration, renew, retry):
        return None
    assert name is not None and duration is not None and renew is not None and retry is not None
    return LeaderElectionSettings(bool(enabled), name, namespace, duration, renew, retry)


def _logging(obj: Obj | None) -> LoggingSettings | None:
    if obj is None:
        return LoggingSettings()
    fmt = obj.string("format", default="auto", choices=("auto", "json", "console"))
    level = obj.string("level", default="info", choices=("debug", "info", "warning", "error"))
    obj.finish()
    if fmt is None or level is None:
        return None
    return LoggingSettings(fmt, level)


def _metrics(obj: Obj | None) -> MetricsSettings | None:
    if obj is None:
        return MetricsSettings()
    limit = obj.integer("perTargetSeriesLimit", default=DEFAULT_PER_TARGET_LIMIT, minimum=0, maximum=1_000_000)
    obj.finish()
    return MetricsSettings(limit) if limit is not None else None


def load_service_settings(
    path: str | None, *, flags: Mapping[tuple[str, ...], Any] | None = None, environ: Mapping[str, str] | None = None
) -> ServiceSettings:
    """Read the file (if any), apply environment overrides, then flag overrides, then validate."""
    document: Any = {}
    if path is not None:
        document = load_yaml_file(path)
        if document is None:
            document = {}
        if not isinstance(document, Mapping):
            raise SpecError([FieldError(path, "must be a YAML mapping of settings")])
    merged = with_overrides(document, environment_overrides(environ))
    merged = with_overrides(merged, flags or {})
    return parse_service_settings(merged)
