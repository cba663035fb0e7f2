"""The resource endpoints: a resource request's verb dispatched to the API operations, and its answer.

Everything below the request pipeline of :mod:`kube_emulator.app` for a path that names a resource: the
endpoint's resource type (404 where the API server has none), then GET, LIST (as JSON or as a
``meta.k8s.io`` Table for kubectl), WATCH (streamed by :mod:`kube_emulator.streaming`), create, update,
patch, delete and deletecollection, each handed to :class:`~kube_emulator.operations.ApiOperations`, which
knows nothing of HTTP. A request's parameters and body are read, and answers written, in
:mod:`kube_emulator.httpio`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from kube_emulator import errors, media, tables
from kube_emulator.faults import FaultPlan
from kube_emulator.httpio import (
    JSON,
    body_of,
    delete_options,
    dry_run_of,
    int_param,
    json_response,
    list_meta,
    options_dry_run,
    read_body,
    write_options,
    written,
)
from kube_emulator.jsonutil import JsonObject, encode
from kube_emulator.operations import ApiOperations
from kube_emulator.patches import BUILTIN_PATCH_TYPES, CUSTOM_RESOURCE_PATCH_TYPES
from kube_emulator.reads import ListResult, Served, read_fresh_enough
from kube_emulator.requestinfo import RequestInfo, parse_bool
from kube_emulator.resources import ResourceType
from kube_emulator.selectors import FieldRequirement, FieldSelector, parse_field_selector, parse_label_selector
from kube_emulator.settings import ServerSettings
from kube_emulator.streaming import WatchRequest, WatchSettings, serve_watch
from kube_emulator.watch import StoredObject


class ResourceEndpoints:
    def __init__(self, ops: ApiOperations) -> None:
        self.ops = ops

    def _resource_type(self, info: RequestInfo) -> ResourceType:
        """The resource type a request names, 404 where the API server has no such endpoint."""
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

    async def serve(
        self, request: web.Request, info: RequestInfo, plan: FaultPlan, settings: ServerSettings
    ) -> web.StreamResponse:
        """Answer a resource request that got past authentication and the fault plan."""
        resource_type = self._resource_type(info)
        if info.verb not in resource_type.verbs:
            raise errors.method_not_allowed(request.method)
        if resource_type.verbs == ("create",):
            return json_response(_review(await read_body(request, media.OBJECT_TYPES, required=True)), 201)
        query = request.query
        dry_run = dry_run_of(query.get("dryRun"))
        namespace = info.namespace if resource_type.namespaced else None
        name = info.name or ""
        verb = info.verb
        as_table = tables.table_version(request.headers.get("Accept", ""))
        if verb in ("get", "list"):
            await read_fresh_enough(self.ops.store, query)  # a resourceVersion not reached yet: wait, then 504
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
                return json_response(self._table(resource_type, listed.items, as_table, query, list_meta(listed)))
            return self._list_response(resource_type, listed)
        if verb == "watch":
            return await self._watch(request, info, resource_type, namespace, plan, as_table, settings)
        if verb == "create":
            if info.subresource is not None:
                raise errors.method_not_allowed(request.method)
            if info.name is not None:
                raise errors.method_not_allowed(request.method)
            body = await read_body(request, media.OBJECT_TYPES, required=True)
            options = write_options(request)
            created = self.ops.create(resource_type, namespace, body, dry_run=dry_run, options=options)
            return written(created, options, 201)
        if verb == "update":
            body = await read_body(request, media.OBJECT_TYPES, required=True)
            options = write_options(request)
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
            return written(result, options)
        if verb == "patch":
            content_type = request.content_type if request.headers.get("Content-Type") else ""
            accepted = BUILTIN_PATCH_TYPES if resource_type.builtin else CUSTOM_RESOURCE_PATCH_TYPES
            body = media.decode(await request.read(), content_type, accepted, required=True)
            options = write_options(request)
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
            return written(patched, options, 201 if was_created else 200)
        if verb == "delete":
            if info.subresource is not None:
                raise errors.method_not_allowed(request.method)
            deletion = await delete_options(request)
            return json_response(
                self.ops.delete(
                    resource_type, namespace or "", name, deletion, dry_run=dry_run or options_dry_run(deletion)
                )
            )
        if verb == "deletecollection":
            deletion = await delete_options(request)
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"))
            deleted = self.ops.delete_collection(
                resource_type, namespace, labels, fields, deletion, dry_run=dry_run or options_dry_run(deletion)
            )
            return self._list_response(resource_type, deleted)
        raise errors.method_not_allowed(request.method)

    def _list(self, resource_type: ResourceType, namespace: str | None, query: Any) -> ListResult:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        limit = int_param(query, "limit")
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
        meta = list_meta(result)
        head = (
            b'{"kind":"'
            + resource_type.list_kind.encode()
            + b'","apiVersion":"'
            + resource_type.api_version.encode()
            + b'","metadata":'
            + encode(meta)
            + b',"items":['
        )
        body = head + b",".join(body_of(item) for item in result.items) + b"]}"
        return web.Response(body=body, content_type=JSON)

    async def _watch(
        self,
        request: web.Request,
        info: RequestInfo,
        resource_type: ResourceType,
        namespace: str | None,
        plan: FaultPlan,
        as_table: str | None,
        settings: ServerSettings,
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
        timeout = int_param(query, "timeoutSeconds")
        watch = WatchRequest(
            resource_type=resource_type,
            namespace=namespace,
            labels=labels,
            fields=fields,
            accepts=accepts,
            since=since,
            timeout=float(timeout) if timeout else settings.default_watch_timeout,
            bookmarks=parse_bool(query.get("allowWatchBookmarks")),
            send_initial_events=parse_bool(query.get("sendInitialEvents")),
            transform=self._watch_table(resource_type, as_table, query) if as_table else None,
        )
        pacing = WatchSettings(settings.bookmark_interval, settings.watch_buffer)
        return await serve_watch(request, self.ops, watch, pacing, plan.drop_watch)

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
