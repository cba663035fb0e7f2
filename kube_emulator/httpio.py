"""HTTP in and out for the resource endpoints: a request's parameters and body read, JSON answers written.

What the API server reads from a request beyond its path (``dryRun``, ``fieldValidation``, ``fieldManager``,
``force``, ``limit``, the DeleteOptions a DELETE may carry, a body in one of the accepted media types) is
parsed here with its 400s; the answers are JSON, a stored object's cached encoding reused as is, with the
warnings a write earned as ``Warning`` headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from kube_emulator import errors, media
from kube_emulator.errors import ApiError
from kube_emulator.govalues import quote
from kube_emulator.jsonutil import JsonObject, encode
from kube_emulator.reads import ListResult, Served
from kube_emulator.requestinfo import parse_bool
from kube_emulator.watch import StoredObject
from kube_emulator.writes import FIELD_VALIDATIONS, WriteOptions

JSON = "application/json"


def body_of(served: Served | JsonObject) -> bytes:
    return served.encoded() if isinstance(served, StoredObject) else encode(served)


def json_response(payload: Served | JsonObject, status: int = 200) -> web.Response:
    return web.Response(body=body_of(payload), status=status, content_type=JSON)


def error_response(problem: ApiError) -> web.Response:
    return web.Response(body=encode(problem.status()), status=problem.code, content_type=JSON, headers=problem.headers)


def list_meta(result: ListResult) -> JsonObject:
    meta: JsonObject = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    return meta


def dry_run_of(value: str | None) -> bool:
    if value in (None, ""):
        return False
    if value != "All":
        raise errors.bad_request(f'unsupported dryRun value "{value}": only "All" is allowed')
    return True


def write_options(request: web.Request) -> WriteOptions:
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


def written(result: Served, options: WriteOptions, status: int = 200) -> web.Response:
    """A write's answer, with the warnings it earned as ``Warning: 299`` headers (kubectl prints them)."""
    response = json_response(result, status)
    for warning in dict.fromkeys(options.warnings):
        response.headers.add("Warning", f"299 - {quote(warning)}")
    return response


async def delete_options(request: web.Request) -> JsonObject | None:
    """The DeleteOptions a DELETE may carry in its body (kubectl sends dryRun, propagationPolicy there)."""
    options = await read_body(request, media.OPTIONS_TYPES, required=False)
    if options is not None and not isinstance(options, dict):
        raise errors.bad_request("the body of a DELETE must be a DeleteOptions object")
    return options


def options_dry_run(options: JsonObject | None) -> bool:
    """``DeleteOptions.dryRun``: ``["All"]`` or nothing, as in the query string."""
    values = (options or {}).get("dryRun") or []
    if not isinstance(values, list) or any(value != "All" for value in values):
        raise errors.bad_request(f'unsupported dryRun value {values!r}: only "All" is allowed')
    return bool(values)


def int_param(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(f"invalid {name}: {raw!r}") from None


async def read_body(request: web.Request, accepted: Sequence[str], *, required: bool) -> Any:
    # Without a Content-Type the API server reads an object as its first media type, JSON (kubectl 1.20's
    # typed clients send none); aiohttp would call it application/octet-stream.
    content_type = request.content_type if request.headers.get("Content-Type") else accepted[0]
    return media.decode(await request.read(), content_type, accepted, required=required)
