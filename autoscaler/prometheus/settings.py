"""How to reach one Prometheus and how to read it, parsed from YAML/JSON with every problem reported.

Example (all keys but ``url`` optional)::

    prometheus:
      url: https://prometheus.monitoring:9090
      bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
      headers: {X-Scope-OrgID: team-a}
      tls: {caFile: /etc/prom/ca.crt, certFile: /etc/prom/tls.crt, keyFile: /etc/prom/tls.key}
      timeoutSeconds: 5
      concurrency: 20
      retries: 2
      cpuRateWindow: 2m
      targetConcurrency: 5          # one target's queries in flight at once (default: concurrency / 4)
      maxResponseBytes: 67108864    # a larger answer fails its query
      largeResponseBytes: 262144    # a larger answer is decoded in steps, the loop's turns between
      maxSampleAgeSeconds: 300      # a sample older than this, for its query's time, fails its metric
      invalidQueryBackoffSeconds: 30       # a query rejected with 400/422 waits this long, doubling…
      invalidQueryBackoffMaxSeconds: 600   # …up to this
      denyPartialResponse: true     # ask Thanos / a VictoriaMetrics cluster to fail rather than answer partially
      followRedirects: never        # or sameOrigin: follow a redirect to the same scheme, host and port only
      queries:
        cpu: sum by (namespace, pod, container) (rate(my_cpu_seconds{<<scope>>}[<<window>>]))

Secrets (``bearerToken``, ``basicAuth.password``, header values, query parameter values) never appear in a
repr or in an error message: a parse error names the field, never its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from autoscaler.prometheus.connection_settings import (
    FOLLOW_NEVER,
    FOLLOW_REDIRECTS,
    REDACTED,
    SecretRef,
    read_basic_auth,
    read_secret_map,
    read_secret_ref,
    read_secret_string,
    read_string_map,
    read_tls,
    read_url,
)
from autoscaler.prometheus.connection_settings import (
    BasicAuth as BasicAuth,  # the settings hold it: importable from here too
)
from autoscaler.prometheus.promql import is_label_name
from autoscaler.prometheus.templates import validate_template
from autoscaler.values.durations import format_prometheus_duration, parse_prometheus_duration
from autoscaler.values.fields import ErrorList, Obj

DEFAULT_TIMEOUT_SECONDS = 5.0
DEFAULT_CONCURRENCY = 20  # Prometheus' own --query.max-concurrency: more only queues there.
DEFAULT_RETRIES = 2
DEFAULT_CPU_RATE_WINDOW = 120.0
# prometheus-adapter's pod regexes broke at 25 kB (VictoriaMetrics caps at 16 kB): batched
# queries split their namespace list to stay below this many bytes of PromQL.
DEFAULT_MAX_QUERY_LENGTH = 8192
# Answers past this are not read (a clear per-query error): a selector without its label matchers can
# return millions of series, and decoding 64 MiB of JSON takes ~0.5 GB of memory.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20
# Answers past this are decoded ~256 KiB at a time, with the loop's turns between (it never stalls on one).
# It was 1 MiB: at 10,000 targets the answers just below that were each decoded in one step of pure Python,
# long enough to be a third of the loop's stalls (why: docs/benchmarks-history.md, "Where the loop stalls").
DEFAULT_LARGE_RESPONSE_BYTES = 256 * 2**10
# A query Prometheus rejects as invalid (400/422) is sent again after this, doubling up to the maximum
# (jittered): not every period, but a fixed template or a Prometheus upgrade is still noticed.
DEFAULT_INVALID_QUERY_BACKOFF = 30.0
# A sample stamped longer than this before its query's evaluation time fails its metric (see
# prometheus/sample_times.py): a few scrape intervals, and ten times a VictoriaMetrics' 30 s latency offset.
DEFAULT_MAX_SAMPLE_AGE = 300.0
DEFAULT_INVALID_QUERY_BACKOFF_MAX = 600.0
# The form fields that ask a backend to fail rather than answer without some of its stores: Thanos'
# partial_response=false and a VictoriaMetrics cluster's deny_partial_response=1. Prometheus and a
# VictoriaMetrics single node ignore them (the live tests send them to both; Mimir is not tested).
DENY_PARTIAL_PARAMETERS = {"partial_response": "false", "deny_partial_response": "1"}


@dataclass(frozen=True)
class PrometheusSettings:
    url: str
    bearer_token: str | None = None
    bearer_token_file: str | None = None
    bearer_token_secret: SecretRef | None = (
        None  # read by the service through the API (service/backends/secret_refs.py)
    )
    basic_auth: BasicAuth | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Headers whose values are read from Secrets through the API (an API key, KEDA's custom auth header).
    header_secrets: Mapping[str, SecretRef] = field(default_factory=dict)
    query_parameters: Mapping[str, str] = field(default_factory=dict)
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False
    # Whether a redirect is followed: never (the query fails naming the Location), or to the same origin
    # only; never to another origin, which would get the credentials (connection_settings.py).
    follow_redirects: str = FOLLOW_NEVER
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    concurrency: int = DEFAULT_CONCURRENCY
    retries: int = DEFAULT_RETRIES
    pod_label: str = "pod"
    container_label: str = "container"
    namespace_label: str = "namespace"
    cpu_rate_window: float = DEFAULT_CPU_RATE_WINDOW
    cpu_query: str | None = None
    memory_query: str | None = None
    max_query_length: int = DEFAULT_MAX_QUERY_LENGTH
    # Ask for gzip-compressed answers: off by default, because between a cluster's pods the bandwidth
    # saved costs more CPU (Prometheus compressing, the service decompressing) than it is worth.
    compression: bool = False
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    large_response_bytes: int = DEFAULT_LARGE_RESPONSE_BYTES
    max_sample_age_seconds: float = DEFAULT_MAX_SAMPLE_AGE
    # At most this many of one target's queries in flight at once (None: a quarter of ``concurrency``,
    # at least 1), so one target's many slow queries leave the other slots to the other targets.
    target_concurrency: int | None = None
    invalid_query_backoff_seconds: float = DEFAULT_INVALID_QUERY_BACKOFF
    invalid_query_backoff_max_seconds: float = DEFAULT_INVALID_QUERY_BACKOFF_MAX
    # Send DENY_PARTIAL_PARAMETERS with every query: a backend missing a store fails the query instead of
    # answering with less data. Either way the metric fails (a partial answer is read as a failure), but a
    # partial answer is recognized only by its flag or warning text, and a refusal needs no recognizing.
    deny_partial_response: bool = True

    @property
    def request_parameters(self) -> Mapping[str, str]:
        """The form fields sent with every query besides its own: the ones that deny partial answers, and
        ``queryParameters`` (which win: a user's own ``partial_response`` is kept)."""
        if not self.deny_partial_response:
            return self.query_parameters
        return {**DENY_PARTIAL_PARAMETERS, **self.query_parameters}

    @property
    def per_target_concurrency(self) -> int:
        if self.target_concurrency is not None:
            return min(self.target_concurrency, self.concurrency)
        return max(1, self.concurrency // 4)

    def __repr__(self) -> str:
        shown: dict[str, object] = {
            "url": self.url,
            "bearer_token": REDACTED if self.bearer_token else None,
            "bearer_token_file": self.bearer_token_file,
            "basic_auth": self.basic_auth,
            "headers": {name: REDACTED for name in self.headers},
            "query_parameters": {name: REDACTED for name in self.query_parameters},
            "ca_file": self.ca_file,
            "cert_file": self.cert_file,
            "key_file": self.key_file,
            "insecure_skip_verify": self.insecure_skip_verify,
            "follow_redirects": self.follow_redirects,
            "timeout_seconds": self.timeout_seconds,
            "concurrency": self.concurrency,
            "retries": self.retries,
            "cpu_rate_window": self.cpu_rate_window,
            "max_response_bytes": self.max_response_bytes,
            "max_sample_age_seconds": self.max_sample_age_seconds,
            "target_concurrency": self.per_target_concurrency,
            "deny_partial_response": self.deny_partial_response,
        }
        if self.bearer_token_secret is not None:  # a reference, no secret (absent when unset: reprs stay as they were)
            shown["bearer_token_secret"] = self.bearer_token_secret
        if self.header_secrets:
            shown["header_secrets"] = dict(self.header_secrets)
        return "PrometheusSettings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    __str__ = __repr__

    @property
    def cpu_rate_window_text(self) -> str:
        return format_prometheus_duration(self.cpu_rate_window)

    @property
    def display_url(self) -> str:
        """The URL as it may appear in messages (it never holds credentials: parsing forbids it)."""
        return self.url


def parse_prometheus_settings(data: object, path: str = "prometheus") -> PrometheusSettings:
    """Parse settings; raise :class:`~autoscaler.values.fields.SpecError` listing every problem."""
    errors = ErrorList()
    settings = read_prometheus_settings(data, path, errors)
    errors.raise_if_any()
    assert settings is not None
    return settings


def read_prometheus_settings(data: object, path: str, errors: ErrorList) -> PrometheusSettings | None:
    """Like :func:`parse_prometheus_settings`, adding problems to ``errors`` (None if any)."""
    before = len(errors.items)
    obj = Obj.of(data, path, errors)
    if obj is None:
        return None
    url = read_url(obj)
    token = read_secret_string(obj, "bearerToken")
    token_file = obj.string("bearerTokenFile", non_empty=True)
    token_secret = read_secret_ref(obj.obj("bearerTokenSecret"))
    if (token is not None) + (token_file is not None) + obj.has("bearerTokenSecret") > 1:
        obj.error("bearerTokenFile", "Forbidden: set one of bearerToken, bearerTokenFile and bearerTokenSecret")
    basic = read_basic_auth(obj.obj("basicAuth"))
    if basic is not None and (token is not None or token_file is not None or token_secret is not None):
        obj.error("basicAuth", "Forbidden: basic auth and a bearer token both set the Authorization header")
    headers = read_string_map(obj, "headers", header_names=True)
    header_secrets = read_secret_map(obj, "headerSecrets")
    if any(name.lower() == "authorization" for name in [*(headers or {}), *(header_secrets or {})]) and (
        basic is not None or token is not None or token_file is not None or token_secret is not None
    ):
        obj.error("headers", "Forbidden: an Authorization header conflicts with bearerToken/basicAuth")
    for name in sorted({n.lower() for n in headers or {}} & {n.lower() for n in header_secrets or {}}):
        obj.errors.add(f"{obj.at('headerSecrets')}.{name}", "Forbidden: the header is in headers too")
    query_parameters = read_string_map(obj, "queryParameters", header_names=False)
    reserved = {"query", "time", "start", "end", "step", "timeout"} & set(query_parameters or {})
    for name in sorted(reserved):
        obj.errors.add(f"{obj.at('queryParameters')}.{name}", "Forbidden: set by the client for every query")
    # A partial_response or deny_partial_response of queryParameters is the user's explicit word: it wins.
    deny_partial = obj.boolean("denyPartialResponse", default=True)
    tls = read_tls(obj.obj("tls"))
    follow_redirects = obj.string("followRedirects", default=FOLLOW_NEVER, choices=FOLLOW_REDIRECTS)
    timeout = obj.number("timeoutSeconds", default=DEFAULT_TIMEOUT_SECONDS, minimum=0.001, maximum=300)
    concurrency = obj.integer("concurrency", default=DEFAULT_CONCURRENCY, minimum=1, maximum=1000)
    retries = obj.integer("retries", default=DEFAULT_RETRIES, minimum=0, maximum=10)
    labels = {
        key: _label_name(obj, key, default)
        for key, default in (("podLabel", "pod"), ("containerLabel", "container"), ("namespaceLabel", "namespace"))
    }
    window = _duration(obj, "cpuRateWindow", DEFAULT_CPU_RATE_WINDOW)
    queries = _queries(obj.obj("queries"))
    max_length = obj.integer("maxQueryLength", default=DEFAULT_MAX_QUERY_LENGTH, minimum=1024)
    compression = obj.boolean("compression", default=False)
    max_response = obj.integer("maxResponseBytes", default=DEFAULT_MAX_RESPONSE_BYTES, minimum=4096, maximum=2**31)
    large_response = obj.integer("largeResponseBytes", default=DEFAULT_LARGE_RESPONSE_BYTES, minimum=0, maximum=2**31)
    max_sample_age = obj.number("maxSampleAgeSeconds", default=DEFAULT_MAX_SAMPLE_AGE, minimum=1, maximum=31536000)
    target_concurrency = obj.integer("targetConcurrency", minimum=1, maximum=1000)
    if target_concurrency is not None and concurrency is not None and target_concurrency > concurrency:
        obj.error("targetConcurrency", f"must be at most concurrency ({concurrency})")
    backoff = obj.number(
        "invalidQueryBackoffSeconds", default=DEFAULT_INVALID_QUERY_BACKOFF, minimum=0.1, maximum=86400
    )
    backoff_max = obj.number(
        "invalidQueryBackoffMaxSeconds", default=DEFAULT_INVALID_QUERY_BACKOFF_MAX, minimum=0.1, maximum=86400
    )
    if backoff is not None and backoff_max is not None and backoff_max < backoff:
        obj.error("invalidQueryBackoffMaxSeconds", f"must be at least invalidQueryBackoffSeconds ({backoff:g})")
    obj.finish()
    if len(errors.items) > before:
        return None
    assert url is not None and timeout is not None and concurrency is not None and retries is not None
    assert window is not None and max_length is not None and max_response is not None
    assert large_response is not None and backoff is not None and backoff_max is not None
    assert follow_redirects is not None and max_sample_age is not None
    return PrometheusSettings(
        url=url,
        bearer_token=token,
        bearer_token_file=token_file,
        bearer_token_secret=token_secret,
        basic_auth=basic,
        headers=headers or {},
        header_secrets=header_secrets or {},
        query_parameters=query_parameters or {},
        ca_file=tls.get("caFile"),
        cert_file=tls.get("certFile"),
        key_file=tls.get("keyFile"),
        insecure_skip_verify=bool(tls.get("insecureSkipVerify")),
        follow_redirects=follow_redirects,
        timeout_seconds=timeout,
        concurrency=concurrency,
        retries=retries,
        pod_label=labels["podLabel"] or "pod",
        container_label=labels["containerLabel"] or "container",
        namespace_label=labels["namespaceLabel"] or "namespace",
        cpu_rate_window=window,
        cpu_query=queries.get("cpu"),
        memory_query=queries.get("memory"),
        max_query_length=max_length,
        compression=bool(compression),
        max_response_bytes=max_response,
        large_response_bytes=large_response,
        max_sample_age_seconds=max_sample_age,
        target_concurrency=target_concurrency,
        invalid_query_backoff_seconds=backoff,
        invalid_query_backoff_max_seconds=backoff_max,
        deny_partial_response=bool(deny_partial),
    )


def _label_name(obj: Obj, key: str, default: str) -> str | None:
    value = obj.string(key, default=default, non_empty=True)
    if value is not None and not is_label_name(value):
        obj.error(key, f"must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), not {value!r}")
        return None
    return value


def _duration(obj: Obj, key: str, default: float) -> float | None:
    raw = obj.raw(key)
    if raw is None:
        return default
    seconds: float | None
    if isinstance(raw, bool):
        seconds = None
    elif isinstance(raw, int | float):
        seconds = float(raw)
    elif isinstance(raw, str):
        seconds = parse_prometheus_duration(raw)
    else:
        seconds = None
    if seconds is None:
        obj.error(key, f'must be a duration such as "2m" or "90s", or a number of seconds, not {raw!r}')
        return None
    if not seconds >= 1 or round(seconds * 1000) != seconds * 1000:
        obj.error(key, "must be at least 1s, in whole milliseconds")
        return None
    return seconds


def _queries(obj: Obj | None) -> dict[str, str]:
    if obj is None:
        return {}
    result: dict[str, str] = {}
    for key in ("cpu", "memory"):
        text = obj.string(key, non_empty=True)
        if text is None:
            continue
        problems = validate_template(text)
        for problem in problems:
            obj.error(key, problem)
        if not problems:
            result[key] = text
    obj.finish()
    return result
