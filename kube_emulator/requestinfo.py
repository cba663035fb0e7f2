"""Turn a request path into what it addresses, as the API server's RequestInfoFactory does.

Fault rules and the request log match on the result (verb, resource, subresource…), so a
test can say "the second PATCH of deployments/scale" without parsing URLs itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Strings strconv.ParseBool accepts as true; kubernetes-asyncio sends "True".
TRUE_VALUES = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    method: str
    path: str
    is_resource_request: bool
    verb: str
    """Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection) for
    resource requests; the lower-case HTTP method otherwise."""
    group: str = ""
    version: str = ""
    namespace: str | None = None
    resource: str = ""
    name: str | None = None
    subresource: str | None = None

    @property
    def resource_label(self) -> str:
        """``deployments`` or ``deployments/scale``: how counters and fault rules name it."""
        if not self.is_resource_request:
            return ""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def parse_bool(value: str | None) -> bool:
    return value is not None and value in TRUE_VALUES


def parse_request(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    method = method.upper()
    parts = [part for part in path.strip("/").split("/") if part]
    non_resource = RequestInfo(method, path, False, method.lower())
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource
    if parts[0] == "api":
        if len(parts) < 3:
            return non_resource
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) < 4:
            return non_resource
        group, version, rest = parts[1], parts[2], parts[3:]

    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
        if not rest:
            return non_resource
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if len(rest) > 3:
        return non_resource

    if legacy_watch or (method == "GET" and parse_bool(query.get("watch"))):
        verb = "watch"
    elif method in ("GET", "HEAD"):
        verb = "get" if name else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
    return RequestInfo(method, path, True, verb, group, version, namespace, resource, name, subresource)
