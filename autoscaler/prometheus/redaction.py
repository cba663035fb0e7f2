"""One redaction for every sink: the secret values the Prometheus settings hold, taken out of any text the
service shows.

A backend's error text may repeat the request (a 400 echoing the form, a proxy's page echoing the
headers), and that text travels: into a metric's failure, a condition's message, the status written to the
cluster, an Event, ``/api/targets``, the log. A pattern can catch ``access_token=…`` but not a value echoed
bare; knowing the values themselves catches both. So one :class:`KnownSecrets` per service knows them all,
and every sink redacts with it:

* ``bearerToken``, and each token read from ``bearerTokenFile`` (the client adds them as it reads them:
  a rotated token is known from its first use);
* ``basicAuth.password`` (or each one read from ``basicAuth.passwordFile``), and the ``Authorization`` value
  it makes (``Basic`` and its base64 text);
* every value of ``headers`` and of ``queryParameters``, as written and as the form encodes it (an echo of
  the raw body shows ``a%2Bb`` for ``a+b``). The settings cannot tell an API key from a tenant name
  (``X-Scope-OrgID``), so every value of both maps is a secret: a tenant's name is redacted too.

Not a secret: a value shorter than :data:`MIN_SECRET_LENGTH` characters, or ``true``/``false`` (a
``dedup: "true"`` would otherwise take every "true" out of every message), which no credential is.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote_plus

from autoscaler.prometheus.connection_settings import REDACTED
from autoscaler.prometheus.settings import PrometheusSettings

MIN_SECRET_LENGTH = 4
_NOT_SECRETS = frozenset({"true", "false"})


def basic_authorization(username: str, password: str) -> str:
    """The ``Authorization`` header value of basic auth."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def is_secret_shaped(value: str) -> bool:
    """Whether ``value`` is redacted where it appears (see the module docstring)."""
    return len(value) >= MIN_SECRET_LENGTH and value.lower() not in _NOT_SECRETS


def configured_secrets(settings: PrometheusSettings) -> list[str]:
    """The secret values ``settings`` hold (a token file's content is read by the client, not here)."""
    values: list[str] = []
    if settings.bearer_token:
        values += [settings.bearer_token]
    basic = settings.basic_auth
    if basic is not None and basic.static:
        header = basic_authorization(basic.username, basic.password)
        values += [basic.password, header, header.removeprefix("Basic ")]
    values += settings.headers.values()
    for value in settings.query_parameters.values():
        values += [value, quote_plus(value)]
    return values


class KnownSecrets:
    """Every secret value of the Prometheus settings given (all the backends a service talks to), and the
    tokens its clients read from files since. :meth:`redact` replaces them in a text, :meth:`redact_document`
    in every string of a JSON-like document.

    Read from any thread (the log's writer thread redacts too): the values are one tuple, replaced whole
    when one is added."""

    def __init__(self, settings: Iterable[PrometheusSettings] = ()) -> None:
        self._values: tuple[str, ...] = ()
        self._public: frozenset[str] = frozenset()  # see publish
        for one in settings:
            self.learn(one)

    def publish(self, values: Iterable[str]) -> None:
        """Never redact ``values``: the names of the Prometheus backends, which messages name ("backend tenant-b:
        …") and which a tenant header's value may equal, but which are no secret (the settings and the service's
        metrics show them)."""
        self._public = self._public | frozenset(values)
        self._values = tuple(value for value in self._values if value not in self._public)

    def __bool__(self) -> bool:
        return bool(self._values)

    def learn(self, settings: PrometheusSettings) -> None:
        """Add the secret values ``settings`` hold."""
        for value in configured_secrets(settings):
            self.add(value)

    def add(self, value: str) -> None:
        """Add one value (a token read from a file); one too short or already known is left out."""
        if not is_secret_shaped(value) or value in self._values or value in self._public:
            return
        # Longest first: a secret that contains another is replaced whole, not around the shorter one.
        self._values = tuple(sorted((*self._values, value), key=len, reverse=True))

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by ``<redacted>``."""
        for secret in self._values:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def redact_document(self, document: Any, *, keep: frozenset[str] = frozenset()) -> Any:
        """A copy of ``document`` (mappings, lists, strings, numbers…) with every string value redacted (not
        the keys: a document's layout is the service's own), but under the mapping keys in ``keep``;
        ``document`` itself when no secret is known."""
        if not self._values:
            return document
        return self._redacted(document, keep)

    def _redacted(self, value: Any, keep: frozenset[str]) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {key: item if key in keep else self._redacted(item, keep) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._redacted(item, keep) for item in value]
        return value
