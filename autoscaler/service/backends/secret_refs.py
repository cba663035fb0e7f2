"""The Prometheus credentials the settings name as Secret references (``bearerTokenSecret``,
``basicAuth.passwordSecret``, ``basicAuth.usernameSecret``, ``headerSecrets``: ``{namespace, name, key}``), read
through the Kubernetes API.

Each referenced Secret is read when the service starts (before its first sync), again every
``REFRESH_SECONDS`` (a rotated Secret is used within a minute), and at once after a backend answers 401 (at
most once a second per Secret). A value is the key's data, base64-decoded, without surrounding whitespace (as
a file's is). A Secret that cannot be read (absent, the key missing, forbidden) fails the requests that need it
with a message naming the Secret and why, never its content; once read, a failed re-read keeps the value read
(a rotation's glitch, or the API server briefly away). Every value read is a known secret: every sink redacts it.

RBAC: the service needs ``get`` on those Secrets: a Role in each Secret's namespace bound to the service's
ServiceAccount (docs/prometheus.md shows one); the default install grants no access to Secrets.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import time
from collections.abc import Iterable, Mapping

import structlog

from autoscaler.kube.api import KubeApi, KubeError, ResourcePath
from autoscaler.prometheus.auth import PrometheusCredentialsError
from autoscaler.prometheus.connection_settings import SecretRef
from autoscaler.prometheus.redaction import KnownSecrets
from autoscaler.prometheus.settings import PrometheusSettings

log = structlog.get_logger("autoscaler.secrets")

SECRETS = ResourcePath("", "v1", "secrets")
REFRESH_SECONDS = 60.0
MIN_REREAD_SECONDS = 1.0  # after a 401, a Secret is read again at most this often
FIRST_READ_SECONDS = 10.0  # the start waits at most this long for the first reads


def secret_refs(backends: Iterable[PrometheusSettings]) -> list[SecretRef]:
    """Every Secret reference of ``backends``' settings, each once."""
    refs: dict[SecretRef, None] = {}
    for settings in backends:
        if settings.bearer_token_secret is not None:
            refs[settings.bearer_token_secret] = None
        basic = settings.basic_auth
        for ref in (basic.password_secret, basic.username_secret) if basic is not None else ():
            if ref is not None:
                refs[ref] = None
        refs.update(dict.fromkeys(settings.header_secrets.values()))
    return list(refs)


class SecretStore:
    """The values of the settings' Secret references (see the module docstring); a
    :class:`~autoscaler.prometheus.auth.SecretSource` for the Prometheus clients."""

    def __init__(
        self, api: KubeApi, refs: Iterable[SecretRef], secrets: KnownSecrets, *, refresh: float = REFRESH_SECONDS
    ) -> None:
        self._api = api
        self._refs = list(dict.fromkeys(refs))
        self._secrets = secrets
        self._refresh = refresh
        self._values: dict[SecretRef, str] = {}
        self._problems: dict[SecretRef, str] = {}
        self._read_at: dict[tuple[str, str], float] = {}  # (namespace, name): when last read
        self._reading: dict[tuple[str, str], asyncio.Future[None]] = {}  # a re-read after a 401 under way
        self._task: asyncio.Task[None] | None = None

    @property
    def refs(self) -> list[SecretRef]:
        return list(self._refs)

    def value(self, ref: SecretRef) -> str:
        found = self._values.get(ref)
        if found is None:
            problem = self._problems.get(ref, "not read yet")
            raise PrometheusCredentialsError(f"cannot read the {ref}: {problem}")
        return found

    async def reread(self, ref: SecretRef) -> None:
        """Read ``ref``'s Secret again now (a backend answered 401), unless it was read within a second; a read
        under way is waited for (two backends' 401s for one rotated Secret read it once)."""
        key = (ref.namespace, ref.name)
        reading = self._reading.get(key)
        if reading is None:
            if time.monotonic() - self._read_at.get(key, float("-inf")) < MIN_REREAD_SECONDS:
                return
            refs = [other for other in self._refs if (other.namespace, other.name) == key]
            reading = self._reading[key] = asyncio.ensure_future(self._read(refs))
            reading.add_done_callback(lambda _: self._reading.pop(key, None))
        await asyncio.shield(reading)

    async def start(self) -> None:
        """Read every Secret once (at most ``FIRST_READ_SECONDS``), then again every ``refresh`` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FIRST_READ_SECONDS):
                await self.read_all()
        self._task = asyncio.create_task(self._refresh_forever(), name="secret-refs")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def read_all(self) -> None:
        await self._read(self._refs)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._refresh)
            await self.read_all()

    async def _read(self, refs: list[SecretRef]) -> None:
        by_secret: dict[tuple[str, str], list[SecretRef]] = {}
        for ref in refs:
            by_secret.setdefault((ref.namespace, ref.name), []).append(ref)
        for (namespace, name), keys in by_secret.items():
            self._read_at[(namespace, name)] = time.monotonic()
            try:
                secret = await self._api.get(SECRETS.item(namespace, name), resource=SECRETS.label)
            except (KubeError, TimeoutError, OSError) as exc:
                problem = _api_problem(exc) if isinstance(exc, KubeError) else f"the API did not answer: {exc!r}"
                for ref in keys:
                    self._failed(ref, problem)
                continue
            data = secret.get("data") if isinstance(secret, Mapping) else None
            for ref in keys:
                self._take(ref, data if isinstance(data, Mapping) else {})

    def _take(self, ref: SecretRef, data: Mapping[str, object]) -> None:
        encoded = data.get(ref.key)
        if not isinstance(encoded, str):
            self._failed(ref, f"the Secret has no key {ref.key}")
            return
        try:
            value = base64.b64decode(encoded, validate=True).decode("utf-8").strip()
        except (binascii.Error, UnicodeDecodeError):
            self._failed(ref, f"the key {ref.key} is not base64-encoded UTF-8 text")
            return
        if not value:
            self._failed(ref, f"the key {ref.key} is empty")
            return
        self._secrets.add(value)
        if self._values.get(ref) != value and ref in self._values:
            log.info("secret reference rotated", secret=str(ref))
        self._values[ref] = value
        self._problems.pop(ref, None)

    def _failed(self, ref: SecretRef, problem: str) -> None:
        self._problems[ref] = problem
        if ref in self._values:  # keep what was read: a rotation's glitch, or the API briefly away
            log.warning(
                "secret reference not re-read; the value read before stays in use", secret=str(ref), error=problem
            )


def _api_problem(error: KubeError) -> str:
    if error.status == 404:
        return "the Secret does not exist"
    if error.status == 403:
        return "forbidden: the service's ServiceAccount needs get on it (a Role in its namespace; docs/prometheus.md)"
    return f"{error.status} {error.reason}: {error.message}"[:300]
