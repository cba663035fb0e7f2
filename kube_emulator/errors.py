"""API errors, answered as ``Status`` objects shaped like the real API server's.

The message formats copy ``k8s.io/apimachinery/pkg/api/errors`` so that code which inspects
``reason``/``code`` (or, regrettably, the message) behaves the same against the emulator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kube_emulator.govalues import field_value, quote
from kube_emulator.jsonutil import JsonObject

REASON_BY_CODE: Mapping[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error answer: raised anywhere below the HTTP layer, rendered by it as a ``Status``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: JsonObject | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = dict(headers or {})

    def status(self) -> JsonObject:
        body: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(name: str | None, group: str, resource: str, **extra: Any) -> JsonObject:
    details: JsonObject = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        # The API server really does put the resource (plural) in ``kind`` here.
        details["kind"] = resource
    details.update(extra)
    return details


def qualified(resource: str, group: str) -> str:
    """``deployments.apps``, or just ``pods`` for the core group."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        details=_details(name, group, resource),
    )


def resource_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", details={})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        details=_details(name, group, resource),
    )


OBJECT_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def conflict(resource: str, group: str, name: str, why: str = OBJECT_MODIFIED) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        details=_details(name, group, resource),
    )


# field.ErrorType values (a cause's ``reason``) and the words ErrorBody() starts with.
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
FORBIDDEN = "FieldValueForbidden"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
DUPLICATE = "FieldValueDuplicate"
_TYPE_WORDS = {
    REQUIRED: "Required value",
    INVALID: "Invalid value",
    TYPE_INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    FORBIDDEN: "Forbidden",
    TOO_LONG: "Too long",
    TOO_MANY: "Too many",
    DUPLICATE: "Duplicate value",
}
_WITHOUT_VALUE = frozenset({REQUIRED, FORBIDDEN, TOO_LONG})


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``field.Error``: a cause of a 422 Invalid, printed as the API server prints it."""

    type: str
    field: str
    value: Any = None
    detail: str = ""
    shown: str | None = None
    """The value as Go prints it, when its Go type is not an unstructured one (``map[string]string{…}``)."""

    def body(self) -> str:
        """``field.Error.ErrorBody()``: ``Invalid value: "abc": detail``, ``Required value``…"""
        text = _TYPE_WORDS[self.type]
        if self.type not in _WITHOUT_VALUE:
            text += ": " + (self.shown if self.shown is not None else field_value(self.value))
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(REQUIRED, field, detail=detail)


def invalid_value(field: str, value: Any, detail: str = "", *, shown: str | None = None) -> FieldError:
    return FieldError(INVALID, field, value, detail, shown)


def not_supported(field: str, value: Any, supported: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(quote(item) for item in supported) if supported else ""
    return FieldError(NOT_SUPPORTED, field, value, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(FORBIDDEN, field, detail=detail)


def invalid(kind: str, group: str, name: str, causes: Sequence[FieldError]) -> ApiError:
    """``errors.NewInvalid``: 422, one cause per field error; several are listed as ``[a, b]`` once each."""
    unique = list(dict.fromkeys(str(cause) for cause in causes))
    summary = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{qualified(kind, group)} "{name}" is invalid: {summary}',
        details=_details(
            name,
            group,
            kind,
            causes=[{"reason": cause.type, "message": cause.body(), "field": cause.field} for cause in causes],
        ),
    )


def unprocessable(message: str) -> ApiError:
    """422 without an object in view (e.g. a JSON patch ``test`` operation that fails)."""
    return ApiError(422, "Invalid", message, details={})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})"
    )


def unsupported_media_type(content_type: str, accepted: Sequence[str]) -> ApiError:
    """415, worded as the API server's content negotiation words it (the sent type is not named)."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
    )


def expired(message: str) -> ApiError:
    """410 Expired: what a watch or a continue token from too far back gets."""
    return ApiError(410, "Expired", message)


def too_large_resource_version(wanted: int, current: int, retry_after_seconds: int) -> ApiError:
    """504: a read or watch-list asked for a resourceVersion the store has not reached
    (``storage.NewTooLargeResourceVersionError``: a Timeout with a ``ResourceVersionTooLarge`` cause)."""
    details: JsonObject = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}
    headers: dict[str, str] = {}
    if retry_after_seconds:  # omitempty, and a Retry-After header, as the API server writes any error's delay
        details["retryAfterSeconds"] = retry_after_seconds
        headers["Retry-After"] = str(retry_after_seconds)
    message = f"Timeout: Too large resource version: {wanted}, current: {current}"
    return ApiError(504, "Timeout", message, details=details, headers=headers)


def too_many_requests(retry_after_seconds: int) -> ApiError:
    return ApiError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        details={"retryAfterSeconds": retry_after_seconds},
        headers={"Retry-After": str(retry_after_seconds)},
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def generic(code: int, message: str | None = None, reason: str | None = None) -> ApiError:
    """Any status code with the reason the API server would give it."""
    chosen_reason = reason or REASON_BY_CODE.get(code, "Unknown")
    default_message = {
        500: "Internal error occurred: injected fault",
        503: "the server is currently unable to handle the request",
        504: "the server was unable to return a response in the time allotted, but may still be processing the request",
    }.get(code, f"injected {code}")
    return ApiError(code, chosen_reason, message or default_message)
