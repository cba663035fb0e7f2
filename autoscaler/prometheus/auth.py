"""Credentials and TLS for the Prometheus client.

The bearer token file (and a basic-auth password file) is checked at most once a second and re-read when its identity or
modification time changes, so rotated tokens (projected service-account tokens, Vault agents)
are picked up without a restart; a 401 forces a re-read at once. The check is one ``stat`` of a
small local file (microseconds), cheap enough to run on the event loop; the TLS files are read
once, in a worker thread, when the client starts.
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Callable
from typing import Protocol

from autoscaler.prometheus.connection_settings import SecretRef
from autoscaler.prometheus.errors import PrometheusError
from autoscaler.prometheus.redaction import KnownSecrets, basic_authorization
from autoscaler.prometheus.settings import PrometheusSettings


class PrometheusCredentialsError(PrometheusError):
    """A credential or TLS file cannot be read (the message names the file, never its content)."""

    kind = "credentials"


class BearerTokenFile:
    """A token (or a basic-auth password: ``what`` names it in errors) read from a file and re-read when the
    file changes."""

    def __init__(
        self,
        path: str,
        *,
        check_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        what: str = "bearer token file",
    ) -> None:
        self.path = path
        self._what = what
        self._check_interval = check_interval
        self._clock = clock
        self._token: str | None = None
        self._identity: tuple[int, int, int, int] | None = None
        self._checked_at = float("-inf")

    def invalidate(self) -> None:
        """Check the file again on the next :meth:`token` call (after a 401)."""
        self._checked_at = float("-inf")
        self._identity = None

    def token(self) -> str:
        now = self._clock()
        if self._token is not None and now - self._checked_at < self._check_interval:
            return self._token
        self._checked_at = now
        try:
            st = os.stat(self.path)
            identity = (st.st_ino, st.st_dev, st.st_mtime_ns, st.st_size)
            if identity != self._identity or self._token is None:
                with open(self.path, encoding="utf-8") as handle:
                    token = handle.read().strip()
                if not token:
                    raise OSError("the file is empty")
                self._token, self._identity = token, identity
        except (OSError, UnicodeDecodeError) as exc:
            if self._token is not None:
                # Mid-rotation glitch: keep the token we have and look again next time.
                return self._token
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise PrometheusCredentialsError(f"cannot read the {self._what} {self.path}: {reason}") from None
        return self._token


class SecretSource(Protocol):
    """Where the values of Secret references come from (the service's :class:`~autoscaler.service.backends.secret_refs.
    SecretStore`, which reads them through the API)."""

    def value(self, ref: SecretRef) -> str:
        """The key's value as last read; raises :class:`PrometheusCredentialsError` saying why there is none."""
        ...

    async def reread(self, ref: SecretRef) -> None:
        """Read the Secret again now (after a 401: it may have been rotated)."""
        ...


class SecretValue:
    """One Secret reference's value, as a credential source like :class:`BearerTokenFile`."""

    def __init__(self, ref: SecretRef, source: SecretSource | None) -> None:
        self.ref = ref
        self._source = source

    def token(self) -> str:
        if self._source is None:
            raise PrometheusCredentialsError(
                f"{self.ref} is read through the Kubernetes API by autoscaler run only: here, name a file instead"
            )
        return self._source.value(self.ref)

    def invalidate(self) -> None:
        pass  # see reread

    async def reread(self) -> None:
        if self._source is not None:
            await self._source.reread(self.ref)


class _Fixed:
    """A password the settings hold, sent with a username read from a Secret."""

    def __init__(self, value: str) -> None:
        self._value = value

    def token(self) -> str:
        return self._value

    def invalidate(self) -> None:
        pass


CredentialSource = BearerTokenFile | SecretValue | _Fixed


class Credentials:
    """The Authorization and custom headers for each request, and the secrets to redact: ``secrets``, when
    given, is the service's one :class:`KnownSecrets` (every sink redacts with it), to which this adds the
    settings' values and each token or password read from a file or a Secret. ``secret_source``: where Secret
    references are read (none: a reference fails the request, saying so)."""

    def __init__(
        self,
        settings: PrometheusSettings,
        secrets: KnownSecrets | None = None,
        secret_source: SecretSource | None = None,
    ) -> None:
        self._static: dict[str, str] = dict(settings.headers)
        self._bearer: CredentialSource | None = None
        if settings.bearer_token_file:
            self._bearer = BearerTokenFile(settings.bearer_token_file)
        elif settings.bearer_token_secret is not None:
            self._bearer = SecretValue(settings.bearer_token_secret, secret_source)
        basic = settings.basic_auth
        self._username = basic.username if basic is not None else ""
        self._username_source = (
            SecretValue(basic.username_secret, secret_source)
            if basic is not None and basic.username_secret is not None
            else None
        )
        self._header_sources = {name: SecretValue(ref, secret_source) for name, ref in settings.header_secrets.items()}
        self._password: CredentialSource | None = None
        if basic is not None and basic.password_file is not None:
            self._password = BearerTokenFile(basic.password_file, what="basic auth password file")
        elif basic is not None and basic.password_secret is not None:
            self._password = SecretValue(basic.password_secret, secret_source)
        if settings.bearer_token:
            self._static["Authorization"] = f"Bearer {settings.bearer_token}"
        elif basic is not None and basic.static:
            self._static["Authorization"] = basic_authorization(basic.username, basic.password)
        elif basic is not None and self._password is None:  # the password is the settings', the username a Secret's
            self._password = _Fixed(basic.password)
        self.secrets = secrets if secrets is not None else KnownSecrets()
        self.secrets.learn(settings)

    @property
    def refreshable(self) -> bool:
        return bool(self._sources())

    def _sources(self) -> list[CredentialSource]:
        sources = [self._bearer, self._password, self._username_source, *self._header_sources.values()]
        return [source for source in sources if source is not None and not isinstance(source, _Fixed)]

    async def refresh(self) -> None:
        """Read the credentials again (after a 401): a file at its next use, a Secret now."""
        for source in self._sources():
            source.invalidate()
            if isinstance(source, SecretValue):
                await source.reread()

    def headers(self) -> dict[str, str]:
        headers = dict(self._static)
        for name, source in self._header_sources.items():
            value = source.token()
            headers[name] = value
            self.secrets.add(value)
        if self._bearer is not None:
            token = self._bearer.token()
            headers["Authorization"] = f"Bearer {token}"
            self.secrets.add(token)
        elif self._password is not None:
            password = self._password.token()
            username = self._username_source.token() if self._username_source is not None else self._username
            header = basic_authorization(username, password)
            headers["Authorization"] = header
            for secret in (password, header, header.removeprefix("Basic ")):
                self.secrets.add(secret)
        return headers

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced (a proxy may echo a header in its error page)."""
        return self.secrets.redact(text)


def build_ssl_context(settings: PrometheusSettings) -> ssl.SSLContext | bool:
    """The TLS context for ``settings`` (True: aiohttp's verified default). Blocking: file reads."""
    if not (settings.ca_file or settings.cert_file or settings.insecure_skip_verify):
        return True
    try:
        context = ssl.create_default_context(cafile=settings.ca_file)
        if settings.cert_file and settings.key_file:
            context.load_cert_chain(settings.cert_file, settings.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise PrometheusCredentialsError(f"cannot load the TLS files: {exc}") from None
    if settings.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
