"""Connecting to the cluster: in-cluster configuration inside a pod, otherwise a kubeconfig.

Order, as kubectl and client-go do it: an explicit ``--kubeconfig``; else, when running in a pod
(``KUBERNETES_SERVICE_HOST`` set and the service-account token mounted), the in-cluster
configuration; else ``$KUBECONFIG``; else ``~/.kube/config``. ``--context`` picks a kubeconfig context.

**Rotating tokens.** A bearer token read from a file — the in-cluster service-account token, or a
kubeconfig user's ``tokenFile`` — is read again when the file changes (kubelet rotates projected
tokens by swapping the file in), checked at most once a second and at once after a 401
(:meth:`TokenFile.reload`, called by :class:`~autoscaler.kube.api.KubeApi`), so a rotation causes no
outage. client-go re-reads such files every minute; kubernetes-asyncio reads a kubeconfig's
``tokenFile`` only once. The token itself never goes into a log line or an exception message.

**The environment is read once.** kubernetes-asyncio's HTTP session trusts the environment on every
request: aiohttp then looks up ``HTTPS_PROXY``/``NO_PROXY`` and reads ``~/.netrc`` for each call, each in a
worker thread — two thread hops and a file open per request, most of the cost of a status write (why:
docs/benchmarks-history.md, "Where 10,000 targets broke first"). :func:`make_api_client` resolves the API
server's proxy from the environment once (``HTTPS_PROXY``/``HTTP_PROXY`` and ``NO_PROXY``, as client-go's
``ProxyFromEnvironment`` does; a kubeconfig's ``proxy-url`` wins) and gives the client a session that does
not look again. ``~/.netrc`` is not used: client-go never reads it, and the API server is authenticated by
token or certificate.

**Error bodies are read in part.** The same session reads at most 64 KiB of an error answer's body, for
every request made through it, the generated API classes' included (:mod:`autoscaler.kube.bodies`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.request import getproxies, proxy_bypass

import aiohttp
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from autoscaler.kube.bodies import CappedErrorResponse
from autoscaler.values.fields import SpecError, type_name
from autoscaler.values.yaml_files import load_yaml_file

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
TOKEN_RECHECK_SECONDS = 1.0
READ_BUFFER_BYTES = 2**21  # kubernetes-asyncio's own: a watch event may carry a 1.5 MiB object


class ConnectionSettingsError(Exception):
    """The cluster cannot be reached with the given settings (the message says what to fix)."""


def running_in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and SERVICE_ACCOUNT_TOKEN.exists()


def kubeconfig_path(explicit: str | None) -> str:
    """The kubeconfig to load (start-up only: a stat of one local file)."""
    path = explicit or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    first = path.split(os.pathsep)[0]
    if not Path(first).exists():
        raise ConnectionSettingsError(
            f"no kubeconfig at {first} and not running in a cluster: pass --kubeconfig or set KUBECONFIG"
        )
    return first


class TokenFile:
    """A ``Configuration.refresh_api_key_hook`` that keeps the bearer token equal to a file's content.

    kubernetes-asyncio calls the hook before every request; the file is looked at (one ``stat``) at
    most every ``recheck`` seconds and read only when it changed (or vanished and came back)."""

    def __init__(self, path: Path, *, recheck: float = TOKEN_RECHECK_SECONDS) -> None:
        self.path = path
        self.recheck = recheck
        self._checked = -float("inf")
        self._signature: tuple[int, int, int] | None = None
        self._token: str | None = None
        self.reloads = 0

    def __call__(self, configuration: Configuration) -> None:
        now = time.monotonic()
        if now - self._checked >= self.recheck:
            self._checked = now
            self._refresh()
        if self._token is not None:
            configuration.api_key["BearerToken"] = f"Bearer {self._token}"
            configuration.api_key_prefix.pop("BearerToken", None)

    def reload(self) -> bool:
        """Look at the file now (after a 401); True when it held a different token."""
        self._checked = time.monotonic()
        return self._refresh()

    def _refresh(self) -> bool:
        try:
            info = self.path.stat()
            signature = (info.st_ino, info.st_mtime_ns, info.st_size)
            if signature == self._signature:
                return False
            token = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return False  # keep the token we have; the server will say if it is no good
        self._signature = signature
        changed = bool(token) and token != self._token
        if token:
            self._token = token
            self.reloads += changed
        return changed


def kubeconfig_token_file(document: Mapping[str, Any], path: str, context: str | None) -> Path | None:
    """The ``tokenFile`` of the kubeconfig user that ``context`` (or the current context) selects, in the
    kubeconfig ``document`` read from ``path``."""
    name = context or document.get("current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in _items(document.get("contexts"))}
    user_name = (contexts.get(name) or {}).get("user")
    users = {u.get("name"): u.get("user") or {} for u in _items(document.get("users"))}
    user = users.get(user_name) or {}
    token_file = user.get("tokenFile") if isinstance(user, Mapping) else None
    if not isinstance(token_file, str) or not token_file or user.get("token"):
        return None  # an inline token wins over the file, as in kubectl
    return Path(path).parent / token_file if not os.path.isabs(token_file) else Path(token_file)


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


async def make_api_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    configuration = Configuration()
    if kubeconfig is None and running_in_cluster():
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        configuration.refresh_api_key_hook = TokenFile(SERVICE_ACCOUNT_TOKEN)
        return _environment_read_once(ApiClient(configuration=configuration))
    first = kubeconfig_path(kubeconfig)
    try:
        # Read through the project's loader first: a file that is not UTF-8, not YAML, or nested or
        # sized past the limits gets its line and column (kubernetes-asyncio's loader would raise
        # RecursionError, UnicodeDecodeError or a bare YAML error on it).
        document = load_yaml_file(first)
    except SpecError as exc:
        raise ConnectionSettingsError(f"kubeconfig {first}: {'; '.join(e.message for e in exc.errors)}") from None
    if not isinstance(document, Mapping):
        raise ConnectionSettingsError(
            f"kubeconfig {first}: must be a YAML mapping (a Config), not {type_name(document)}"
        )
    try:
        await config.load_kube_config(config_file=first, context=context, client_configuration=configuration)
    except (config.ConfigException, OSError, ValueError) as exc:
        raise ConnectionSettingsError(f"kubeconfig {first}: {exc}") from exc
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        # kubernetes-asyncio reads the Config's structure as it goes: a section of the wrong shape
        # surfaces as one of these from inside it.
        raise ConnectionSettingsError(
            f"kubeconfig {first}: not a valid Config (a section has the wrong shape: {type(exc).__name__}: {exc})"
        ) from exc
    token_file = kubeconfig_token_file(document, first, context)
    if token_file is not None and configuration.refresh_api_key_hook is None:
        configuration.refresh_api_key_hook = TokenFile(token_file)
    return _environment_read_once(ApiClient(configuration=configuration))


def environment_proxy(server: str) -> str | None:
    """The proxy the environment names for the API server at ``server`` (``HTTPS_PROXY`` or
    ``HTTP_PROXY`` by its scheme, either case, unless ``NO_PROXY`` covers its host), credentials
    included; None for a direct connection."""
    url = URL(server)
    if url.host is None or proxy_bypass(url.host):
        return None
    return getproxies().get(url.scheme)


def _environment_read_once(client: ApiClient) -> ApiClient:
    """``client`` with its proxy taken from the environment now, and a session that does not read the
    environment (nor ``~/.netrc``) again on every request, and reads error bodies only in part (see the
    module's docstring)."""
    rest = client.rest_client
    host = client.configuration.host
    if not rest.proxy and host:
        found = environment_proxy(host)
        if found is not None:
            rest.proxy = found
    trusting = rest.pool_manager
    rest.pool_manager = aiohttp.ClientSession(
        connector=trusting.connector,
        trust_env=False,
        read_bufsize=READ_BUFFER_BYTES,
        response_class=CappedErrorResponse,
    )
    trusting.detach()  # the connector (its TLS settings and pool) now belongs to the new session
    return client
