"""A thin JSON layer over kubernetes-asyncio's ApiClient.

The service reads and writes raw JSON (plain dicts) instead of the generated models: it keeps only
trimmed records of what it watches (a parsed V1Pod costs ~30 KiB; the fields the HPA algorithm reads
fit in well under 1 KiB), and generic resources (any kind with a ``scale`` subresource, custom
resources) need no model at all. Requests still go through the real client — its configuration,
authentication (kubeconfig, exec plugins, in-cluster token refresh), TLS and connection pool — via
``ApiClient.call_api``. Every call has a timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp.http_exceptions import LineTooLong
from kubernetes_asyncio.client import ApiClient

from autoscaler.kube.bodies import cut_note, is_error, read_error_body
from autoscaler.kube.jsondecode import tolerant_loads
from autoscaler.values.clipping import clip
from autoscaler.values.durations import parse_retry_after

JSON_CONTENT = "application/json"
MERGE_PATCH = "application/merge-patch+json"

THROTTLE_RETRIES = 3
MAX_RETRY_AFTER = 10.0
# The longest watch event line read. The API server stores objects of up to ~1.5 MiB (etcd's request limit)
# and accepts request bodies of up to 3 MiB; aiohttp's line reader stops at 128 KiB by default, which a
# pod with a large annotation passes (and that used to end the watch with an uncaught LineTooLong).
MAX_EVENT_BYTES = 16 * 2**20
# The most of an error's message kept (a :class:`KubeError`'s, and so every log line, probe, condition and
# Event that repeats it): a Status from a real API server says what went wrong in far less.
MESSAGE_LIMIT = 1024
_EXCERPT = 300  # bytes shown of an error's body that is not a Status (an HTML page from a proxy, say)

RequestObserver = Callable[[str, str, int, float], None]  # verb, resource, status code, seconds
SILENT = "Silent"  # the reason of a watch that sent nothing for its idle timeout


class KubeError(Exception):
    """The API server answered with an error ``Status`` (or could not be reached: status 0). Its message
    is cut to :data:`MESSAGE_LIMIT` characters (see :mod:`autoscaler.kube.bodies`)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.retry_after: float | None = None
        self.reason = clip(reason, 100)  # a Status' reason is one CamelCase word
        self.message = clip(message, MESSAGE_LIMIT)
        head = f"{status} {self.reason}" if self.reason else str(status)
        super().__init__(f"{head}: {self.message}" if status else self.message)

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def gone(self) -> bool:
        return self.status == 410


@dataclass(frozen=True, slots=True)
class ResourcePath:
    """Where a kind lives: ``/api/v1`` or ``/apis/<group>/<version>``, plus its plural."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection(self, namespace: str | None = None) -> str:
        if self.namespaced and namespace:
            return f"{self.prefix}/namespaces/{namespace}/{self.plural}"
        return f"{self.prefix}/{self.plural}"

    def item(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        path = f"{self.collection(namespace)}/{name}"
        return f"{path}/{subresource}" if subresource else path

    @property
    def label(self) -> str:
        """The resource name used in metrics and logs (``deployments``, ``scalingtargets.autoscaler.dev``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = ResourcePath("", "v1", "pods")
EVENTS = ResourcePath("", "v1", "events")
DEPLOYMENTS = ResourcePath("apps", "v1", "deployments")
LEASES = ResourcePath("coordination.k8s.io", "v1", "leases")
VPAS = ResourcePath("autoscaling.k8s.io", "v1", "verticalpodautoscalers")
# Other autoscalers, watched so that a workload they scale is not scaled here too
# (service/cluster/other_autoscalers.py).
HPAS = ResourcePath("autoscaling", "v2", "horizontalpodautoscalers")
SCALED_OBJECTS = ResourcePath("keda.sh", "v1alpha1", "scaledobjects")  # KEDA's CRD: may be absent


class KubeApi:
    """JSON requests and watch streams through one kubernetes-asyncio ``ApiClient``."""

    def __init__(self, api_client: ApiClient, *, timeout: float = 10.0, observe: RequestObserver | None = None) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self._observe = observe
        # API Priority and Fairness answers 429 with Retry-After: every request of this client then
        # waits until that moment (slowing down globally, not just the one caller).
        self._throttled_until = 0.0
        self.throttled = 0

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = JSON_CONTENT,
        seconds: float | None = None,
        resource: str = "",
    ) -> Any:
        """One JSON request; returns the decoded body or raises :class:`KubeError`.

        A 429 is retried after its Retry-After (at most ``THROTTLE_RETRIES`` times, each wait capped),
        and holds back this client's other requests meanwhile. A 401 is retried once if the token file
        holds a new token (a rotation, see :mod:`autoscaler.kube.client`)."""
        reauthenticated = False
        for attempt in range(THROTTLE_RETRIES + 1):
            wait = self._throttled_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                return await self._request_once(method, path, query, body, content_type, seconds, resource)
            except KubeError as exc:
                if exc.status == 401 and not reauthenticated and self._token_rotated():
                    reauthenticated = True
                    continue
                if exc.status != 429 or attempt == THROTTLE_RETRIES:
                    raise
                self.throttled += 1
                delay = min(MAX_RETRY_AFTER, max(0.1, exc.retry_after or 1.0))
                self._throttled_until = max(self._throttled_until, time.monotonic() + delay)
        raise AssertionError("unreachable")

    def _token_rotated(self) -> bool:
        hook = getattr(self.api_client.configuration, "refresh_api_key_hook", None)
        reload = getattr(hook, "reload", None)
        return bool(reload()) if callable(reload) else False

    async def _request_once(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        body: Any,
        content_type: str,
        seconds: float | None,
        resource: str,
    ) -> Any:
        started = time.monotonic()
        retry_after: str | None = None
        status = 0
        try:
            response = await self.api_client.call_api(
                path,
                method,
                query_params=list(query),
                header_params={"Content-Type": content_type, "Accept": JSON_CONTENT},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=seconds or self.timeout,
            )
            async with response:
                status = response.status
                retry_after = response.headers.get("Retry-After")
                payload, unread = await read_error_body(response) if is_error(status) else (await response.read(), 0)
        except TimeoutError as exc:
            raise KubeError(0, "Timeout", f"{method} {path}: no answer within {seconds or self.timeout:g}s") from exc
        except aiohttp.ClientError as exc:
            raise KubeError(0, "Unreachable", f"{method} {path}: {exc}") from exc
        finally:
            if self._observe is not None:
                self._observe(method.lower(), resource or path, status, time.monotonic() - started)
        if is_error(status):
            error = _error_from(status, payload, f"{method} {path}", unread)
            error.retry_after = parse_retry_after(retry_after)
            raise error
        return await _decode(payload, f"{method} {path}") if payload else None

    async def get(self, path: str, *, resource: str = "", query: Sequence[tuple[str, str]] = ()) -> Any:
        return await self.request("GET", path, query=query, resource=resource)

    async def merge_patch(self, path: str, body: Mapping[str, Any], *, resource: str = "") -> Any:
        return await self.request("PATCH", path, body=body, content_type=MERGE_PATCH, resource=resource)

    async def create(self, path: str, body: Mapping[str, Any], *, resource: str = "") -> Any:
        return await self.request("POST", path, body=body, resource=resource)

    async def watch(
        self,
        path: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        label_selector: str | None = None,
        resource: str = "",
        idle_timeout: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request (``watch=true`` from ``resource_version``, with bookmarks),
        until the server ends the stream. Every way the stream can fail — an ERROR event, a connection
        cut mid-body or reset, nothing received for ``idle_timeout`` seconds (default: the watch's own
        timeout plus 30 s), a line that is not JSON or is longer than
        :data:`MAX_EVENT_BYTES` — is raised as :class:`KubeError`, so the caller has one thing to handle."""
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        longest = float(timeout_seconds + 30)
        idle = min(longest, idle_timeout) if idle_timeout is not None else longest
        started = time.monotonic()
        try:
            # The answer's headers come at once from a healthy server: their wait is bounded like any
            # request's. The stream itself has no total deadline; its silence is bounded line by line below.
            async with asyncio.timeout(self.timeout):
                response = await self.api_client.call_api(
                    path,
                    "GET",
                    query_params=query,
                    header_params={"Accept": JSON_CONTENT},
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _request_timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=longest),
                )
        except TimeoutError as exc:
            raise KubeError(0, "Timeout", f"watch {path}: no answer within {self.timeout:g}s") from exc
        except aiohttp.ClientError as exc:
            raise KubeError(0, "Unreachable", f"watch {path}: {exc}") from exc
        async with response:
            if self._observe is not None:
                self._observe("watch", resource or path, response.status, time.monotonic() - started)
            if response.status != 200:
                payload, unread = await read_error_body(response)
                raise _error_from(response.status, payload, f"watch {path}", unread)
            while True:
                try:
                    async with asyncio.timeout(idle):
                        line = await response.content.readuntil(b"\n", max_size=MAX_EVENT_BYTES)
                except TimeoutError as exc:
                    response.close()  # a frozen connection must not go back to the pool
                    raise KubeError(0, SILENT, f"watch {path}: nothing received for {idle:g}s") from exc
                except (aiohttp.ClientError, OSError) as exc:
                    response.close()
                    raise KubeError(
                        0, "Unreachable", f"watch {path}: the stream broke: {type(exc).__name__}: {exc}"
                    ) from exc
                except LineTooLong as exc:
                    response.close()
                    raise KubeError(
                        0, "TooLarge", f"watch {path}: an event longer than {MAX_EVENT_BYTES} bytes"
                    ) from exc
                if not line:
                    return  # the server ended the watch
                if not line.strip():
                    continue
                event = await _decode(line, f"watch {path}")
                if not isinstance(event, dict):
                    raise KubeError(0, "Malformed", f"watch {path}: an event that is not an object")
                if event.get("type") == "ERROR":
                    obj = event.get("object") or {}
                    raise KubeError(
                        int(obj.get("code") or 500),
                        str(obj.get("reason") or "Error"),
                        str(obj.get("message") or "watch error"),
                    )
                yield event


async def _decode(payload: bytes, what: str) -> Any:
    """JSON from the API server: orjson, or (an object orjson refuses: too deep, a huge number) the
    tolerant decoder, off the event loop since it is pure Python (see :mod:`.jsondecode`)."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        pass
    try:
        return await asyncio.to_thread(tolerant_loads, payload)
    except ValueError as exc:
        raise KubeError(0, "Malformed", f"{what}: the answer is not JSON ({exc})") from None


def _error_from(status: int, payload: bytes, what: str, unread: int = 0) -> KubeError:
    """The error of an answer of ``status`` whose body is a ``Status`` or any other text: ``payload``, all
    of it or (``unread`` bytes were left unread, see :mod:`.bodies`) its head, of which 300 bytes are shown."""
    try:
        body = orjson.loads(payload) if not unread else None
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return KubeError(status, str(body.get("reason") or ""), str(body.get("message") or what))
    text = payload[:_EXCERPT].decode("utf-8", "replace").strip()
    if not text:
        return KubeError(status, "", f"{what}: HTTP {status}")
    return KubeError(status, "", f"{what}: {text}{cut_note(unread, max(0, len(payload) - _EXCERPT))}")
