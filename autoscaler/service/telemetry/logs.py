"""Logging: structlog for our own events, the standard library's records (aiohttp, kubernetes_asyncio,
asyncio…) routed through the same processors, one JSON object per line (or a console rendering).

The chain, top to bottom:

1. ``merge_contextvars`` — context bound in the current task (``bound_contextvars(namespace=…, name=…)``
   in a reconciler) joins every line logged from it, the libraries' included;
2. level filter, level, logger name, ISO-8601 UTC timestamp (``%``-style arguments formatted);
3. exceptions as structured data (JSON) or text (console), without local variables;
4. :func:`redact_secrets` — last before rendering, so it sees messages, context and tracebacks alike: the
   values the service knows to be secrets (:func:`redact_known_secrets`, the Prometheus settings' — the
   one redaction every sink applies), then anything that looks like a credential;
5. JSON lines (``timestamp``, ``level``, ``logger``, ``event`` first) or the console renderer.

Our modules log with ``structlog.stdlib.get_logger(__name__)`` and plain (synchronous) methods: the ``a*``
methods hand each line to a thread pool, which costs more than writing it.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, Processor, WrappedLogger

from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.service.settings import LoggingSettings
from autoscaler.service.telemetry.log_writer import ThreadedStreamHandler

REDACTED = "[REDACTED]"

# Keys whose values are secrets whatever they look like ("bearer_token", "Proxy-Authorization",
# "client_secret", "X-Api-Key"…), but not keys that merely mention them ("token_file", "secret_name").
_SECRET_KEY = re.compile(
    r"(authorization|password|passwd|secret|token|api[_-]?key|cookie|credentials?)s?$", re.IGNORECASE
)

# Secrets inside text, replaced in this order.
_TEXT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # "Authorization: Bearer abc", "'authorization': 'Basic abc'", "authorization=abc"
    (
        re.compile(r"""(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)([A-Za-z]+\s+)?[^\s"',;}]+""", re.IGNORECASE),
        rf"\1\2{REDACTED}",
    ),
    # a bare credential after its scheme, e.g. in an exception message
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9._~+/-]{8,}=*", re.IGNORECASE), rf"\1 {REDACTED}"),
    # password=…, "client_secret": "…", access_token=… (query strings, dict reprs, config dumps)
    (
        re.compile(
            r"""(\b[\w-]*(?:password|passwd|secret|token|api[_-]?key)["']?\s*[:=]\s*["']?)[^\s"',;&}]+""", re.IGNORECASE
        ),
        rf"\1{REDACTED}",
    ),
    # https://user:password@host
    (re.compile(r"([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@", re.IGNORECASE), rf"\1{REDACTED}@"),
    # a JSON Web Token on its own (service-account tokens are JWTs)
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), REDACTED),
)

_FIRST_KEYS = ("timestamp", "level", "logger", "event")
_OUR_HANDLER = "_autoscaler_handler"


# Every pattern above needs one of these words: text without any (most log values: names, reasons,
# timestamps) is returned as it is after one search instead of five substitutions.
_MAYBE_SECRET = re.compile(r"authorization|bearer|basic|passw|secret|token|api[_-]?key|://|eyJ", re.IGNORECASE)


# The service's one redaction (its Prometheus settings' secret values), once it has one.
_known_secrets = KnownSecrets()


def redact_known_secrets(secrets: KnownSecrets) -> None:
    """From now on, every line is redacted of ``secrets``' values too, whatever their shape: a value echoed
    bare by a backend matches none of the patterns."""
    global _known_secrets
    _known_secrets = secrets


def redact_text(text: str) -> str:
    """``text`` with every known secret value replaced by ``<redacted>``, and anything that looks like a
    credential by ``[REDACTED]``."""
    text = _known_secrets.redact(text)
    if not _MAYBE_SECRET.search(text):
        return text
    for pattern, replacement in _TEXT_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


@functools.lru_cache(maxsize=4096)
def _secret_key(key: str) -> bool:
    """Whether ``key`` names a secret. Remembered: the keys of log lines are nearly always the same few dozen
    names, and a regex search per key per line showed in a line's cost."""
    return _SECRET_KEY.search(key) is not None


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {
            key: (REDACTED if isinstance(key, str) and _secret_key(key) and value[key] else _redact(value[key]))
            for key in value
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_redact(item) for item in value]
    # Anything else would be rendered with repr(), which may spell out a token (a config object, a
    # request): render it here, redacted.
    return redact_text(repr(value))


def redact_secrets(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    """A structlog processor: redact secret-looking keys and values, at any depth."""
    redacted: EventDict = _redact(event_dict)
    return redacted


def _first_keys_first(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    ordered = {key: event_dict.pop(key) for key in _FIRST_KEYS if key in event_dict}
    ordered.update(event_dict)
    return ordered


def _level(settings: LoggingSettings) -> int:
    return logging.getLevelNamesMapping().get(settings.level.upper(), logging.INFO)


def _use_console(settings: LoggingSettings, stream: TextIO) -> bool:
    if settings.format == "auto":
        isatty = getattr(stream, "isatty", None)
        return bool(isatty and isatty())
    return settings.format == "console"


def configure_logging(settings: LoggingSettings, *, stream: TextIO | None = None, in_thread: bool = False) -> None:
    """Configure structlog and the standard library's root logger to write to ``stream`` (stderr by
    default). Calling it again replaces the previous configuration; handlers installed by others
    (pytest's, for instance) are left alone. ``in_thread``: lines are written by a thread of their own
    (:mod:`autoscaler.service.telemetry.log_writer`), as the service does; otherwise where they are logged."""
    stream = sys.stderr if stream is None else stream
    console = _use_console(settings, stream)
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    common: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        timestamper,
    ]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            *common[1:],
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a module-level logger used before this call (an import-time warning, a test) would
        # otherwise keep the old configuration for good. Logging is not hot enough for it to matter.
        cache_logger_on_first_use=False,
    )

    renderer: Processor
    if console:
        exceptions: Processor = structlog.processors.format_exc_info
        renderer = structlog.dev.ConsoleRenderer(colors=_use_colors(stream))
    else:
        exceptions = structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False))
        renderer = structlog.processors.JSONRenderer()
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*common, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            exceptions,
            redact_secrets,
            *([] if console else [_first_keys_first]),
            renderer,
        ],
    )
    handler: logging.Handler = ThreadedStreamHandler(stream) if in_thread else logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    setattr(handler, _OUR_HANDLER, True)

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OUR_HANDLER, False)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(_level(settings))


def _use_colors(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def log_lines_dropped() -> int:
    """Lines this module's handler dropped because its stream did not keep up (see
    :mod:`~autoscaler.service.telemetry.log_writer`), since logging was last configured."""
    return sum(
        getattr(handler, "dropped_total", 0)
        for handler in logging.getLogger().handlers
        if getattr(handler, _OUR_HANDLER, False)
    )


def flush_logs() -> None:
    """Wait until this module's handler has written what was logged (a blocking call: off the loop)."""
    for handler in logging.getLogger().handlers:
        if getattr(handler, _OUR_HANDLER, False):
            handler.flush()
