"""Named Prometheus backends: ``prometheus.backends`` of the service settings.

The ``prometheus`` block itself is the *default* backend (named ``default``): every metric without a
``backend`` is read from it, as before backends existed. Each entry of ``prometheus.backends`` is another one,
with every key the ``prometheus`` block takes (docs/prometheus.md) but ``backends``; a metric names it with
``backend: <name>``. A named backend stands alone: it inherits nothing from the default one (a credential
meant for one server must never reach another, and a timeout or label name set for one is not silently
another's), so what it leaves out takes the documented default.

.. code-block:: yaml

    prometheus:
      url: http://prometheus.monitoring:9090          # the default backend
      backends:
        tenant-b:
          url: https://mimir.example:8080/prometheus
          headers: {X-Scope-OrgID: tenant-b}
          basicAuth: {username: autoscaler, passwordFile: /etc/autoscaler/tenant-b/password}
          tls: {caFile: /etc/autoscaler/tenant-b/ca.crt}
          timeoutSeconds: 10

Credentials are files (``bearerTokenFile``, ``basicAuth.passwordFile``, the TLS key), read by the service
and re-read when they change: a target never holds one, it only names the backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autoscaler.core.metric_spec_parse import BACKEND_NAME
from autoscaler.core.spec import MetricSpec
from autoscaler.prometheus.settings import PrometheusSettings, read_prometheus_settings
from autoscaler.values.fields import ErrorList, Obj

DEFAULT_BACKEND = "default"
BACKENDS_KEY = "backends"
MAX_BACKENDS = 100  # each is an aiohttp session and its connection pool


def read_backends(data: object, path: str, errors: ErrorList) -> dict[str, PrometheusSettings] | None:
    """The named backends of ``prometheus.backends`` (``data``), each problem added with its path; None if any."""
    before = len(errors.items)
    obj = Obj.of(data, path, errors)
    if obj is None:
        return None
    if len(obj.value) > MAX_BACKENDS:
        errors.add(path, f"Too many: {len(obj.value)}: must have at most {MAX_BACKENDS} backends")
        return None
    backends: dict[str, PrometheusSettings] = {}
    for key, value in obj.value.items():
        obj.mark_known(key)
        name = str(key)
        where = f"{path}.{name}"
        if name == DEFAULT_BACKEND:
            errors.add(where, f'Forbidden: "{DEFAULT_BACKEND}" is the prometheus block itself (prometheus.url)')
            continue
        if not BACKEND_NAME.match(name):
            errors.add(where, "must be a backend name: a DNS-1123 label (lowercase letters, digits, '-'; at most 63)")
            continue
        settings = read_prometheus_settings(value, where, errors)
        if settings is not None:
            backends[name] = settings
    obj.finish()
    return backends if len(errors.items) == before else None


def split_backends(prometheus: object) -> tuple[object, object]:
    """The ``prometheus`` block without its ``backends`` (the default backend's settings), and the backends."""
    if isinstance(prometheus, Mapping) and BACKENDS_KEY in prometheus:
        rest = {key: value for key, value in prometheus.items() if key != BACKENDS_KEY}
        return rest, prometheus[BACKENDS_KEY]
    return prometheus, None


def all_backends(default: PrometheusSettings, named: Mapping[str, PrometheusSettings]) -> dict[str, PrometheusSettings]:
    """Every backend by name, the default one first."""
    return {DEFAULT_BACKEND: default, **named}


def backend_of(name: str | None) -> str:
    """The backend a metric's ``backend`` field names (None: the default one)."""
    return name if name is not None else DEFAULT_BACKEND


def one_backend(
    default: PrometheusSettings, named: Mapping[str, PrometheusSettings], metrics: Iterable[MetricSpec]
) -> PrometheusSettings | str:
    """The one backend every metric of ``metrics`` is read from, for a tool that replays a single Prometheus
    (``autoscaler backtest``); else why it cannot be one (a metric never silently reads another backend)."""
    wanted = {backend_of(metric.backend): metric for metric in metrics}
    if len(wanted) > 1:
        listed = ", ".join(f'{metric.type.value} metric "{metric.name}" from {name}' for name, metric in wanted.items())
        return f"the metrics read from more than one Prometheus backend ({listed}); a replay reads one"
    name = next(iter(wanted), DEFAULT_BACKEND)
    if name == DEFAULT_BACKEND:
        return default
    settings = named.get(name)
    if settings is None:
        known = ", ".join(all_backends(default, named))
        return f"the metrics read from backend {name}, which the settings do not have ({known}; prometheus.backends)"
    return settings
