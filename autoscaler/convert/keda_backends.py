"""Where a KEDA prometheus trigger reads from, as a named backend of the service's settings
(``prometheus.backends``).

KEDA's prometheus scaler (``pkg/scalers/prometheus_scaler.go``) asks ``serverAddress`` with the trigger's own
``namespace`` (a ``namespace=`` query parameter, for Thanos' tenancy), ``queryParameters``, ``customHeaders``,
``unsafeSsl``, ``timeout`` and credentials (``authModes`` with the TriggerAuthentication's parameters). Each
distinct combination becomes one backend, named after its host; every trigger that reads the same way shares it.
Credentials are files, each the mount of a Secret (or ConfigMap) key the TriggerAuthentication names, or
Secret references the service reads through the API: the fragment says which, and holds no value read from any
Secret. The only values it holds are what is no credential: a basic auth username or a custom header's value
from a ConfigMap, and a custom header's name (from a ConfigMap or a Secret) — see ``keda_auth.READABLE``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from autoscaler.convert.keda_auth import AuthParams, Reference
from autoscaler.convert.keda_values import go_bool, go_duration_seconds, go_map
from autoscaler.convert.model import Conversion
from autoscaler.prometheus.connection_settings import HEADER_NAME

DEFAULT_MOUNT_DIR = "/etc/autoscaler/keda"
AUTH_MODES = ("apiKey", "basic", "tls", "bearer", "custom", "oauth")
_NAME_CHARACTERS = re.compile(r"[^a-z0-9]+")
MAX_NAME = 63


@dataclass(frozen=True)
class Backend:
    """How one trigger reads Prometheus; equal triggers share a backend."""

    url: str
    bearer_token: Reference | None = None
    basic_username: Reference | None = None  # a Secret's key: the settings read it through the API
    basic_username_value: str | None = None  # read from a ConfigMap (no secret): written as basicAuth.username
    basic_password: Reference | None = None
    header_secrets: tuple[tuple[str, Reference], ...] = ()  # KEDA's custom auth: header name -> its value's key
    ca: Reference | None = None
    cert: Reference | None = None
    key: Reference | None = None
    insecure_skip_verify: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    query_parameters: tuple[tuple[str, str], ...] = ()
    timeout_seconds: Decimal | None = None

    def read_by_api(self, secret_refs: bool) -> list[Reference]:
        """The Secret keys the service reads through the API: basic auth's username always (the settings take
        no username file), and with ``secret_refs`` the bearer token and basic auth's password."""
        chosen = [self.basic_username, *(ref for _, ref in self.header_secrets)]
        chosen += [self.bearer_token, self.basic_password] if secret_refs else []
        return [ref for ref in chosen if ref is not None and ref.kind == "Secret"]

    def files(self, secret_refs: bool) -> list[Reference]:
        """The keys the service reads as mounted files."""
        by_api = self.read_by_api(secret_refs)
        chosen = (self.bearer_token, self.basic_password, self.ca, self.cert, self.key)
        return [ref for ref in chosen if ref is not None and ref not in by_api]

    def settings(self, mount_dir: str, secret_refs: bool = False) -> dict[str, Any]:
        """The backend as the service's settings write it: each credential a file under ``mount_dir``, or with
        ``secret_refs`` the bearer token a Secret reference the service reads through the API."""
        out: dict[str, Any] = {"url": self.url}
        by_api = self.read_by_api(secret_refs)

        def credential(ref: Reference, file_key: str, secret_key: str) -> dict[str, Any]:
            if ref in by_api:
                return {secret_key: {"namespace": ref.namespace, "name": ref.name, "key": ref.key}}
            return {file_key: mounted_path(ref, mount_dir)}

        if self.bearer_token:
            out.update(credential(self.bearer_token, "bearerTokenFile", "bearerTokenSecret"))
        if self.basic_username and self.basic_password:
            out["basicAuth"] = {
                **credential(self.basic_username, "usernameFile", "usernameSecret"),
                **credential(self.basic_password, "passwordFile", "passwordSecret"),
            }
        elif self.basic_username_value is not None and self.basic_password:
            out["basicAuth"] = {
                "username": self.basic_username_value,
                **credential(self.basic_password, "passwordFile", "passwordSecret"),
            }
        tls: dict[str, Any] = {}
        for key, ref in (("caFile", self.ca), ("certFile", self.cert), ("keyFile", self.key)):
            if ref is not None:
                tls[key] = mounted_path(ref, mount_dir)
        if self.insecure_skip_verify:
            tls["insecureSkipVerify"] = True
        if tls:
            out["tls"] = tls
        if self.headers:
            out["headers"] = dict(self.headers)
        if self.header_secrets:
            out["headerSecrets"] = {
                name: {"namespace": ref.namespace, "name": ref.name, "key": ref.key}
                for name, ref in self.header_secrets
            }
        if self.query_parameters:
            out["queryParameters"] = dict(self.query_parameters)
        if self.timeout_seconds is not None:
            seconds = float(self.timeout_seconds)
            out["timeoutSeconds"] = int(seconds) if seconds.is_integer() else seconds
        return out


def mounted_path(reference: Reference, mount_dir: str) -> str:
    """Where a Secret or ConfigMap key is mounted: ``<dir>/<secret|configmap>/<namespace>/<name>/<key>``."""
    kind = reference.kind.lower()
    return f"{mount_dir.rstrip('/')}/{kind}/{reference.namespace}/{reference.name}/{reference.key}"


@dataclass
class BackendRegistry:
    """The backends of one run of ``convert``, named in the order they are first needed."""

    backends: dict[Backend, str] = field(default_factory=dict)
    users: dict[str, list[str]] = field(default_factory=dict)  # name -> the triggers that read from it

    def name_for(self, backend: Backend, user: str) -> str:
        name = self.backends.get(backend)
        if name is None:
            name = _unique_name(_base_name(backend.url), set(self.backends.values()))
            self.backends[backend] = name
        self.users.setdefault(name, []).append(user)
        return name

    def keep(self, names: set[str]) -> None:
        """Forget the backends no written target reads from (an object refused after naming one)."""
        self.backends = {backend: name for backend, name in self.backends.items() if name in names}
        self.users = {name: users for name, users in self.users.items() if name in names}

    def fragment(self, mount_dir: str, secret_refs: bool = False) -> dict[str, Any]:
        """``prometheus.backends`` of the service's settings, in name order."""
        by_name = sorted((name, backend) for backend, name in self.backends.items())
        backends = {name: backend.settings(mount_dir, secret_refs) for name, backend in by_name}
        return {"prometheus": {"backends": backends}}

    def mounts(self, mount_dir: str, secret_refs: bool = False) -> list[tuple[str, Reference]]:
        """Every credential file the backends read, with the key it must be mounted from (each once)."""
        found = {mounted_path(ref, mount_dir): ref for backend in self.backends for ref in backend.files(secret_refs)}
        return sorted(found.items())

    def secret_reads(self, secret_refs: bool) -> list[Reference]:
        """The Secret keys the service reads through the API (each once)."""
        return sorted({ref for backend in self.backends for ref in backend.read_by_api(secret_refs)})


def _base_name(url: str) -> str:
    host = (urlsplit(url).hostname or "prometheus").lower()
    # prometheus.monitoring.svc.cluster.local -> prometheus-monitoring
    host = host.removesuffix(".cluster.local").removesuffix(".svc")
    name = _NAME_CHARACTERS.sub("-", host).strip("-") or "prometheus"
    name = name[: MAX_NAME - 4].strip("-")
    return f"keda-{name}" if name == "default" or not name[0].isalpha() else name


def _unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    number = 2
    while f"{base}-{number}" in taken:
        number += 1
    return f"{base}-{number}"


def backend_of(
    metadata: Mapping[str, Any], auth: AuthParams | None, path: str, conversion: Conversion
) -> Backend | None:
    """The backend a prometheus trigger reads from (None after an error in its metadata)."""
    meta_path = f"{path}.metadata"
    url = str(metadata.get("serverAddress") or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        conversion.errors.append(f"{meta_path}.serverAddress: {url!r} is not an http:// or https:// URL with a host")
        return None
    if parts.username is not None or parts.query or parts.fragment:
        conversion.errors.append(
            f"{meta_path}.serverAddress: credentials, a query or a fragment in the URL are not converted "
            "(use a TriggerAuthentication and queryParameters)"
        )
        return None
    parameters: dict[str, str] = {}
    namespace = str(metadata.get("namespace") or "").strip()
    if namespace:  # KEDA sends it first; a second namespace= from queryParameters is the one read second
        parameters["namespace"] = namespace
    extra = (
        go_map(metadata["queryParameters"], f"{meta_path}.queryParameters", conversion)
        if metadata.get("queryParameters")
        else {}
    )
    for key, value in (extra or {}).items():
        parameters.setdefault(key, value)
    headers = (
        go_map(metadata["customHeaders"], f"{meta_path}.customHeaders", conversion)
        if metadata.get("customHeaders")
        else {}
    )
    insecure = (
        go_bool(metadata["unsafeSsl"], f"{meta_path}.unsafeSsl", conversion) if metadata.get("unsafeSsl") else False
    )
    timeout = (
        go_duration_seconds(metadata["timeout"], f"{meta_path}.timeout", conversion)
        if metadata.get("timeout")
        else None
    )
    if timeout is not None and timeout <= 0:
        timeout = None  # KEDA: 0 means the global HTTP timeout
    credentials = _credentials(metadata, auth, path, conversion)
    if extra is None or headers is None or insecure is None or credentials is None:
        return None
    custom = credentials.pop("custom_header", None)
    if custom is not None:  # KEDA sets it after customHeaders: it replaces one of the same name
        names = {custom[0].lower(), *(name.lower() for name, _ in credentials.get("header_secrets", ()))}
        headers = {name: value for name, value in (headers or {}).items() if name.lower() not in names}
        if custom[1] is not None:
            headers[custom[0]] = custom[1]
    return Backend(
        url=url,
        insecure_skip_verify=insecure,
        headers=tuple(sorted((headers or {}).items())),
        query_parameters=tuple(sorted(parameters.items())),
        timeout_seconds=timeout,
        **credentials,
    )


def _credentials(
    metadata: Mapping[str, Any], auth: AuthParams | None, path: str, conversion: Conversion
) -> dict[str, Any] | None:
    """The credential references of ``authModes`` (KEDA's ``authentication.Config``)."""
    if auth is not None and auth.missing:
        return {}  # its credentials are unknown: the loss is reported where the object is named
    refs = auth.references if auth else {}
    raw_modes = metadata.get("authModes") or metadata.get("authMode")
    if not raw_modes and ("authModes" in refs or "authMode" in refs):
        ref = refs.get("authModes") or refs["authMode"]
        conversion.lost(
            f"{path}.authenticationRef",
            f"authModes comes from {ref}: the converter reads no Secret's value; write authModes in the "
            "trigger's metadata",
        )
        return {}
    modes = [m.strip() for m in str(raw_modes or "").split(",") if m.strip()]
    where = f"{path}.metadata.authModes"
    unknown = [m for m in modes if m not in AUTH_MODES]
    if unknown:
        conversion.errors.append(f"{where}: {', '.join(unknown)}: must be among {', '.join(AUTH_MODES)}")
        return None
    if len({"bearer", "basic", "oauth"} & set(modes)) > 1:
        conversion.errors.append(f"{where}: only one of bearer, basic and oauth (KEDA refuses more)")
        return None
    source = auth.source if auth else "the trigger (no authenticationRef)"
    out: dict[str, Any] = {}

    def need(parameter: str, *names: str) -> Reference | None:
        for name in (parameter, *names):
            if name in refs:
                return refs[name]
        conversion.errors.append(f"{where}: {parameter} is required by these modes and {source} does not give it")
        return None

    for mode in modes:
        if mode == "bearer":
            token = need("bearerToken", "token")
            if token:
                out["bearer_token"] = token
        elif mode == "basic":
            username, password = need("username"), need("password")
            plain = auth.readable("username") if auth else None  # a ConfigMap's: no secret
            if username and password and plain is not None:
                out["basic_username_value"], out["basic_password"] = plain, password
            elif username and username.kind != "Secret":
                conversion.lost(
                    where,
                    f"basic: the username is {username}, which is not in {_searched(auth)}: the settings read a "
                    "username from a Secret (basicAuth.usernameSecret) only; give the ConfigMap (or write "
                    "basicAuth.username in this trigger's backend yourself)",
                )
            elif username and password:
                out["basic_username"], out["basic_password"] = username, password
        elif mode == "tls":
            cert, key = need("cert"), need("key")
            if cert and key:
                out["cert"], out["key"] = cert, key
        elif mode == "custom" and {"bearer", "basic"} & set(modes):
            pass  # KEDA sends one Authorization: bearer, else basic, else the custom header (never two)
        elif mode == "custom" and "customAuthHeader" in refs and "customAuthValue" in refs:
            custom = _custom_header(auth, refs["customAuthHeader"], refs["customAuthValue"], where, conversion)
            if custom is not None:
                out.update(custom)
        else:
            conversion.lost(
                where,
                f"{mode}: KEDA's {mode} authentication has no equivalent in the backends' settings "
                "(bearer, basic, tls, headers, headerSecrets)",
            )
    if modes and "ca" in refs:  # KEDA uses the CA whenever any mode is on
        out["ca"] = refs["ca"]
    return out


def _searched(auth: AuthParams | None) -> str:
    return auth.index.searched if auth and auth.index else "the input files"


def _custom_header(
    auth: AuthParams | None, header: Reference, value: Reference, where: str, conversion: Conversion
) -> dict[str, Any] | None:
    """KEDA's custom authentication, header ``customAuthHeader: customAuthValue``: the header's name read from its
    ConfigMap or Secret (a name, no credential); its value a Secret reference (``headerSecrets``), or when it is
    in a ConfigMap, the value itself (a plain header)."""
    name = auth.readable("customAuthHeader") if auth else None
    plain = auth.readable("customAuthValue") if auth and value.kind == "ConfigMap" else None
    if name is None or (value.kind == "ConfigMap" and plain is None):
        unread = header if name is None else value
        secret = f"{{namespace: {value.namespace}, name: {value.name}, key: {value.key}}}"
        instruction = (
            f"headerSecrets: {{<that name>: {secret}}}"
            if value.kind == "Secret"
            else f"headers: {{<that name>: <the value of {value}>}}"
        )
        conversion.lost(
            where,
            f"custom: the header's name is {header}, and {unread} is not in {_searched(auth)}; give it (or add "
            f"{instruction} to this trigger's backend yourself)",
        )
        return None
    if not HEADER_NAME.match(name):
        conversion.lost(where, f"custom: the header's name read from {header} is not a valid HTTP header name")
        return None
    if plain is not None:
        return {"custom_header": (name, plain)}
    return {"custom_header": (name, None), "header_secrets": ((name, value),)}
