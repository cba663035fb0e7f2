"""The aiohttp application: the request pipeline in front of the endpoints.

One catch-all route feeds :class:`ApiHandler`, which mirrors the API server's request
pipeline in miniature: authentication (optional bearer token), request logging, fault
injection, then either a non-resource path (health, ``/version``, discovery, OpenAPI), answered
here, or a resource request, answered by :class:`~kube_emulator.endpoints.ResourceEndpoints`.
Everything below those is HTTP-free.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from kube_emulator import discovery, errors, openapi, openapi_v2
from kube_emulator.endpoints import ResourceEndpoints
from kube_emulator.errors import ApiError
from kube_emulator.faults import Disconnect, ExpireWatch, FaultInjector, answer_error
from kube_emulator.httpio import error_response, json_response
from kube_emulator.jsonutil import JsonObject
from kube_emulator.operations import ApiOperations
from kube_emulator.requestinfo import RequestInfo, parse_request
from kube_emulator.requestlog import RequestLog, RequestRecord
from kube_emulator.settings import ServerSettings
from kube_emulator.streaming import serve_expired

log = logging.getLogger(__name__)

_HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


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
        self.endpoints = ResourceEndpoints(ops)

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
            response = await self.endpoints.serve(request, info, plan, self.settings)
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


def _bearer_matches(request: web.Request, token: str) -> bool:
    return request.headers.get("Authorization") == f"Bearer {token}"


def build_app(handler: ApiHandler) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", handler.handle)
    return app
