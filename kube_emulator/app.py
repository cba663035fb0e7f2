"""The aiohttp application: parse a request, apply faults, call the operation, encode the answer.

One catch-all route feeds :class:`ApiHandler`, which mirrors the API server's request
pipeline in miniature: authentication (optional bearer token), request logging, fault
injection, then the verb handler. Everything below this module is HTTP-free.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kube_emulator import discovery, errors, media, openapi, openapi_v2, tables
from kube_emulator.errors import ApiError
from kube_emulator.faults import Disconnect, ExpireWatch, FaultInjector, FaultPlan, answer_error
from kube_emulator.govalues import quote
from kube_emulator.jsonutil import JsonObject, encode
from kube_emulator.operations import FIELD_VALIDATIONS, ApiOperations, ListResult, Served, WriteOptions
from kube_emulator.patches import BUILTIN_PATCH_TYPES, CUSTOM_RESOURCE_PATCH_TYPES
from kube_emulator.requestinfo import RequestInfo, parse_bool, parse_request
from kube_emulator.requestlog import RequestLog, RequestRecord
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import (
    FieldRequirement,
    FieldSelector,
    parse_field_selector,
    parse_label_selector,
)
from kube_emulator.streaming import WatchRequest, WatchSettings, serve_expired, serve_watch
from kube_emulator.watch import StoredObject

log = logging.getLogger(__name__)

JSON = "application/json"
_HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


@dataclass(frozen=True, slots=True)
class ServerSettings:
    bookmark_interval: float = 60.0
    """Seconds between BOOKMARK events on an idle watch that asked for them (the real server: ~1 min)."""
    default_watch_timeout: float = 1800.0
    """How long a watch without ``timeoutSeconds`` stays open (the real server: 30–60 min)."""
    watch_buffer: int = 10_000
    """Events buffered per watcher before it is closed as too slow."""
    token: str | None = None
    """If set, every request but health checks must carry ``Authorization: Bearer <token>``."""
    server_version: str = "v1.33.0"


def _body(served: Served | JsonObject) -> bytes:
    return served.encoded() if isinstance(served, StoredObject) else encode(served)


def json_response(payload: Served | JsonObject, status: int = 200) -> web.Response:
    return web.Response(body=_body(payload), status=status, content_type=JSON)


def error_response(problem: ApiError) -> web.Response:
    return web.Response(body=encode(problem.status()), status=problem.code, content_type=JSON, headers=problem.headers)


class _Disconnected(Exception):
    """An injected disconnect: the connection is already closed, nothing is to be answered."""


class ApiHandler:
    def __init__(
        self,
        ops: ApiOperations,
        faults: FaultInjector,
        requests: RequestLog,
        settings: ServerSettings,
        server_address: Callable[[], str],
    ) -> None:
        self.ops = ops
        self.faults = faults
        self.requests = requests
        self.settings = settings
        self._server_address = server_address

    async def handle(self, request: web.Request) -> web.StreamResponse:
        info = parse_request(request.method, request.path, request.query)
        record = self.requests.start(info, request.query_string)
        status = 500
        try:
            response = await self._handle(request, info, record)
            status = response.status
            return response
        except ApiError as problem:
            status = problem.code
            return error_response(problem)
        except _Disconnected:
            status = 0  # nothing was answered; aiohttp finds the transport closed and drops this
            return web.Response(status=503)
        except (ConnectionResetError, asyncio.CancelledError):
            status = 499  # the client went away
            raise
        except Exception as unexpected:  # a bug in the emulator: answer like the API server would
            log.exception("emulator failed on %s %s", request.method, request.path_qs)
            return error_response(errors.generic(500, f"Internal error occurred: {unexpected!r}"))
        finally:
            record.finish(status)

    async def _handle(self, request: web.Request, info: RequestInfo, record: RequestRecord) -> web.StreamResponse:
        token = self.settings.token
        if token is not None and request.path not in _HEALTH_PATHS and not _bearer_matches(request, token):
            raise errors.unauthorized()
        plan = self.faults.plan(info)
        record.fault = plan.description
        if plan.delay_before:
            await asyncio.sleep(plan.delay_before)
        if isinstance(plan.answer, Disconnect):
            if request.transport is not None:
                request.transport.abort()
            raise _Disconnected
        if isinstance(plan.answer, ExpireWatch):
            return await serve_expired(request, errors.expired("too old resource version: injected"))
        if plan.answer is not None:
            raise answer_error(plan.answer, info)
        if not info.is_resource_request:
            response: web.StreamResponse = self._non_resource(request)
        else:
            response = await self._resource(request, info, plan)
        if plan.delay_after:
            await asyncio.sleep(plan.delay_after)
        return response

    # --- discovery and other non-resource paths ---------------------------------------------------

    def _non_resource(self, request: web.Request) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed(request.method)
        path = request.path.rstrip("/") or "/"
        if path in _HEALTH_PATHS:
            return web.Response(text="ok")
        if path == "/version":
            return json_response(discovery.version_info(self.settings.server_version))
        if path == "/api":
            return json_response(discovery.api_versions(self._server_address()))
        if path == "/apis":
            return json_response(discovery.api_group_list(self.ops.registry))
        if path == "/openapi/v2":
            if openapi_v2.PROTOBUF in request.headers.get("Accept", ""):
                body = openapi_v2.document_protobuf(self.ops.registry, self.settings.server_version)
                return web.Response(body=body, content_type=openapi_v2.PROTOBUF_ANSWER)
            return json_response(openapi_v2.document(self.ops.registry, self.settings.server_version))
        if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            found = openapi.lookup(self.ops.registry, path.removeprefix("/openapi/v3"), self.settings.server_version)
            if found is None:
                raise errors.resource_not_found()
            return json_response(found)
        parts = path.strip("/").split("/")
        document: JsonObject | None = None
        if parts[0] == "api" and len(parts) == 2:
            document = discovery.api_resource_list(self.ops.registry, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            document = discovery.api_group(self.ops.registry, parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            document = discovery.api_resource_list(self.ops.registry, parts[1], parts[2])
        if document is None:
            raise errors.resource_not_found()
        return json_response(document)

    # --- resources -------------------------------------------------------------------------------

    def _resource_type(self, info: RequestInfo) -> ResourceType:
        resource_type = self.ops.registry.lookup(info.group, info.version, info.resource)
        if resource_type is None:
            raise errors.resource_not_found()
        if info.subresource is not None and info.subresource not in resource_type.subresources:
            raise errors.resource_not_found()
        if resource_type.namespaced:
            if info.name is not None and info.namespace is None and info.verb != "watch":
                raise errors.resource_not_found()
        elif info.namespace is not None and info.resource != "namespaces":
            raise errors.resource_not_found()
        return resource_type

    async def _resource(self, request: web.Request, info: RequestInfo, plan: FaultPlan) -> web.StreamResponse:
        resource_type = self._resource_type(info)
        if info.verb not in resource_type.verbs:
            raise errors.method_not_allowed(request.method)
        if resource_type.verbs == ("create",):
            return json_response(_review(await _read_body(request, media.OBJECT_TYPES, required=True)), 201)
        query = request.query
        dry_run = _dry_run(query.get("dryRun"))
        namespace = info.namespace if resource_type.namespaced else None
        name = info.name or ""
        verb = info.verb
        as_table = tables.table_version(request.headers.get("Accept", ""))
        if verb == "get":
            if info.subresource == "scale":
                return json_response(self.ops.get_scale(resource_type, namespace or "", name))
            served = self.ops.get(resource_type, namespace or "", name)
            if as_table and info.subresource is None:
                return json_response(self._table(resource_type, [served], as_table, query))
            return json_response(served)
        if verb == "list":
            listed = self._list(resource_type, namespace, query)
            if as_table:
                return json_response(self._table(resource_type, listed.items, as_table, query, _list_meta(listed)))
            return self._list_response(resource_type, listed)
        if verb == "watch":
            return await self._watch(request, info, resource_type, namespace, plan, as_table)
        if verb == "create":
            if info.subresource is not None:
                raise errors.method_not_allowed(request.method)
            if info.name is not None:
                raise errors.method_not_allowed(request.method)
            body = await _read_body(request, media.OBJECT_TYPES, required=True)
            options = _write_options(request)
            created = self.ops.create(resource_type, namespace, body, dry_run=dry_run, options=options)
            return _written(created, options, 201)
        if verb == "update":
            body = await _read_body(request, media.OBJECT_TYPES, required=True)
            options = _write_options(request)
            if info.subresource == "scale":
                return json_response(
                    self.ops.update_scale(resource_type, namespace or "", name, body, dry_run=dry_run, options=options)
                )
            result = self.ops.update(
                resource_type,
                namespace or "",
                name,
                body,
                subresource=info.subresource,
                dry_run=dry_run,
                options=options,
            )
            return _written(result, options)
        if verb == "patch":
            content_type = request.content_type if request.headers.get("Content-Type") else ""
            accepted = BUILTIN_PATCH_TYPES if resource_type.builtin else CUSTOM_RESOURCE_PATCH_TYPES
            body = media.decode(await request.read(), content_type, accepted, required=True)
            options = _write_options(request)
            patched, was_created = self.ops.patch(
                resource_type,
                namespace or "",
                name,
                content_type,
                body,
                subresource=info.subresource,
                dry_run=dry_run,
                options=options,
            )
            return _written(patched, options, 201 if was_created else 200)
        if verb == "delete":
            if info.subresource is not None:
                raise errors.method_not_allowed(request.method)
            deletion = await _delete_options(request)
            return json_response(
                self.ops.delete(
                    resource_type, namespace or "", name, deletion, dry_run=dry_run or _options_dry_run(deletion)
                )
            )
        if verb == "deletecollection":
            deletion = await _delete_options(request)
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"))
            deleted = self.ops.delete_collection(
                resource_type, namespace, labels, fields, deletion, dry_run=dry_run or _options_dry_run(deletion)
            )
            return self._list_response(resource_type, deleted)
        raise errors.method_not_allowed(request.method)

    def _list(self, resource_type: ResourceType, namespace: str | None, query: Any) -> ListResult:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        limit = _int_param(query, "limit")
        requested = query.get("resourceVersion")
        if query.get("resourceVersionMatch") == "Exact" and requested not in (
            None,
            "",
            str(self.ops.store.resource_version),
        ):
            # Only the current state is kept; an exact historical list is as gone as a compacted one.
            raise errors.expired(f"The resourceVersion for the provided list is too old: {requested}")
        return self.ops.list(
            resource_type,
            namespace,
            labels,
            fields,
            limit=limit or None,
            continue_token=query.get("continue") or None,
        )

    def _table(
        self,
        resource_type: ResourceType,
        items: Sequence[Served],
        version: str,
        query: Any,
        list_meta: JsonObject | None = None,
        *,
        headers: bool = True,
    ) -> JsonObject:
        include = query.get("includeObject") or "PartialObjectMetadata"
        if include not in ("None", "Object", "PartialObjectMetadata"):
            raise errors.bad_request(f'includeObject "{include}" is not one of None, Object, PartialObjectMetadata')
        return tables.table(
            resource_type,
            [item.obj if isinstance(item, StoredObject) else item for item in items],
            self.ops.clock.now(),
            version=version,
            include_object=include,
            headers=headers,
            list_meta=list_meta,
        )

    @staticmethod
    def _list_response(resource_type: ResourceType, result: ListResult) -> web.Response:
        meta = _list_meta(result)
        head = (
            b'{"kind":"'
            + resource_type.list_kind.encode()
            + b'","apiVersion":"'
            + resource_type.api_version.encode()
            + b'","metadata":'
            + encode(meta)
            + b',"items":['
        )
        body = head + b",".join(_body(item) for item in result.items) + b"]}"
        return web.Response(body=body, content_type=JSON)

    async def _watch(
        self,
        request: web.Request,
        info: RequestInfo,
        resource_type: ResourceType,
        namespace: str | None,
        plan: FaultPlan,
        as_table: str | None,
    ) -> web.StreamResponse:
        query = request.query
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        if info.name:  # the legacy /watch/.../<name> form
            fields = FieldSelector((*fields.requirements, FieldRequirement("metadata.name", info.name, False)))
        accepts = self.ops.matcher(resource_type, labels, fields)
        raw_version = query.get("resourceVersion") or ""
        since: int | None = None
        if raw_version not in ("", "0"):
            try:
                since = int(raw_version)
            except ValueError:
                raise errors.bad_request(f"invalid resource version: {raw_version!r}") from None
        timeout = _int_param(query, "timeoutSeconds")
        watch = WatchRequest(
            resource_type=resource_type,
            namespace=namespace,
            labels=labels,
            fields=fields,
            accepts=accepts,
            since=since,
            timeout=float(timeout) if timeout else self.settings.default_watch_timeout,
            bookmarks=parse_bool(query.get("allowWatchBookmarks")),
            send_initial_events=parse_bool(query.get("sendInitialEvents")),
            transform=self._watch_table(resource_type, as_table, query) if as_table else None,
        )
        settings = WatchSettings(self.settings.bookmark_interval, self.settings.watch_buffer)
        return await serve_watch(request, self.ops, watch, settings, plan.drop_watch)

    def _watch_table(self, resource_type: ResourceType, version: str, query: Any) -> Callable[[Served], JsonObject]:
        """Each watched object as a one-row Table; only the first carries the column definitions."""
        first = True

        def transform(served: Served) -> JsonObject:
            nonlocal first
            converted = self._table(resource_type, [served], version, query, headers=first)
            first = False
            return converted

        return transform


def _review(body: Any) -> JsonObject:
    """A SelfSubjectAccessReview answered: the emulator authorizes every request (``kubectl auth can-i``)."""
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    status = {"allowed": True, "reason": "the emulator authorizes every request"}
    return {**body, "metadata": body.get("metadata") or {}, "status": status}


def _list_meta(result: ListResult) -> JsonObject:
    meta: JsonObject = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    return meta


def _bearer_matches(request: web.Request, token: str) -> bool:
    return request.headers.get("Authorization") == f"Bearer {token}"


def _dry_run(value: str | None) -> bool:
    if value in (None, ""):
        return False
    if value != "All":
        raise errors.bad_request(f'unsupported dryRun value "{value}": only "All" is allowed')
    return True


def _write_options(request: web.Request) -> WriteOptions:
    query = request.query
    validation = query.get("fieldValidation") or "Warn"
    if validation not in FIELD_VALIDATIONS:
        raise errors.bad_request(f'fieldValidation "{validation}" is not one of {", ".join(FIELD_VALIDATIONS)}')
    return WriteOptions(
        field_validation=validation,
        field_manager=query.get("fieldManager") or None,
        force=parse_bool(query.get("force")),
        user_agent=request.headers.get("User-Agent", ""),
    )


def _written(result: Served, options: WriteOptions, status: int = 200) -> web.Response:
    """A write's answer, with the warnings it earned as ``Warning: 299`` headers (kubectl prints them)."""
    response = json_response(result, status)
    for warning in dict.fromkeys(options.warnings):
        response.headers.add("Warning", f"299 - {quote(warning)}")
    return response


async def _delete_options(request: web.Request) -> JsonObject | None:
    """The DeleteOptions a DELETE may carry in its body (kubectl sends dryRun, propagationPolicy there)."""
    options = await _read_body(request, media.OPTIONS_TYPES, required=False)
    if options is not None and not isinstance(options, dict):
        raise errors.bad_request("the body of a DELETE must be a DeleteOptions object")
    return options


def _options_dry_run(options: JsonObject | None) -> bool:
    """``DeleteOptions.dryRun``: ``["All"]`` or nothing, as in the query string."""
    values = (options or {}).get("dryRun") or []
    if not isinstance(values, list) or any(value != "All" for value in values):
        raise errors.bad_request(f'unsupported dryRun value {values!r}: only "All" is allowed')
    return bool(values)


def _int_param(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(f"invalid {name}: {raw!r}") from None


async def _read_body(request: web.Request, accepted: Sequence[str], *, required: bool) -> Any:
    # Without a Content-Type the API server reads an object as its first media type, JSON (kubectl 1.20's
    # typed clients send none); aiohttp would call it application/octet-stream.
    content_type = request.content_type if request.headers.get("Content-Type") else accepted[0]
    return media.decode(await request.read(), content_type, accepted, required=required)


def build_app(handler: ApiHandler) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", handler.handle)
    return app
