"""The Prometheus metrics layer: an asyncio client, query templates, and the reader that turns
targets' metric specs into the readings the decision engine consumes. See ``docs/prometheus.md``."""

from autoscaler.prometheus.client import ClientStats, PrometheusClient
from autoscaler.prometheus.connection_settings import BasicAuth
from autoscaler.prometheus.errors import (
    PrometheusBadQuery,
    PrometheusError,
    PrometheusHTTPError,
    PrometheusMalformedResponse,
    PrometheusPartialAnswer,
    PrometheusRedirect,
    PrometheusResponseTooLarge,
    PrometheusTimeout,
    PrometheusUnreachable,
)
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import MetricsReader
from autoscaler.prometheus.results import InstantResult, RangeResult, RangeSeries, Series
from autoscaler.prometheus.settings import PrometheusSettings, parse_prometheus_settings
from autoscaler.prometheus.templates import validate_template

__all__ = [
    "BasicAuth",
    "ClientStats",
    "InstantResult",
    "MetricsReader",
    "PrometheusBadQuery",
    "PrometheusClient",
    "PrometheusError",
    "PrometheusHTTPError",
    "PrometheusMalformedResponse",
    "PrometheusPartialAnswer",
    "PrometheusRedirect",
    "PrometheusResponseTooLarge",
    "PrometheusSettings",
    "PrometheusTimeout",
    "PrometheusUnreachable",
    "RangeResult",
    "RangeSeries",
    "Series",
    "TargetQuery",
    "parse_prometheus_settings",
    "validate_template",
]
