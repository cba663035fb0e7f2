"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over plain JSON values.

Strategic merge patch lives in :mod:`kube_emulator.strategic_merge`; a PATCH picks one of these by its
content type in :mod:`kube_emulator.writes`, where server-side apply is a merge on top of them (its field
ownership: :mod:`kube_emulator.ownership`).
"""

from __future__ import annotations

from typing import Any

from kube_emulator.jsonutil import clone, json_equal

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

CUSTOM_RESOURCE_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
BUILTIN_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)


class PatchError(Exception):
    """The patch does not apply to the object (the API server answers 422)."""


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else (lists too) replaces.

    ``target`` is not modified; untouched subtrees of it are shared with the result.
    """
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def apply_json_patch(document: Any, operations: list[Any]) -> Any:
    """RFC 6902. ``document`` is not modified. Raises :class:`PatchError` like evanphx/json-patch."""
    result = clone(document)
    for operation in operations:
        if not isinstance(operation, dict):
            raise PatchError(f"invalid JSON patch operation {operation!r}")
        op = operation.get("op")
        path = operation.get("path")
        if not isinstance(path, str):
            raise PatchError(f"operation {op!r} is missing a path")
        if op == "add":
            result = _add(result, path, clone(_value_of(operation)))
        elif op == "remove":
            result, _ = _remove(result, path)
        elif op == "replace":
            result, _ = _remove(result, path, verb="replace")
            result = _add(result, path, clone(_value_of(operation)))
        elif op == "move":
            source = _from_of(operation)
            if path != source and path.startswith(source + "/"):
                raise PatchError(f"move operation can not move a value into one of its children: {source} → {path}")
            result, moved = _remove(result, source, verb="move")
            result = _add(result, path, moved)
        elif op == "copy":
            copied = clone(_get(result, _from_of(operation), verb="copy"))
            result = _add(result, path, copied)
        elif op == "test":
            if not json_equal(_get(result, path, verb="test", missing_ok=True), _value_of(operation)):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {op}")
    return result


def _value_of(operation: dict[str, Any]) -> Any:
    if "value" not in operation:
        raise PatchError(f"{operation.get('op')} operation on {operation.get('path')} is missing a value")
    return operation["value"]


def _from_of(operation: dict[str, Any]) -> str:
    source = operation.get("from")
    if not isinstance(source, str):
        raise PatchError(f"{operation.get('op')} operation is missing 'from'")
    return source


def _tokens(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _array_index(token: str, length: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PatchError(f"array index {index} out of bounds (length {length})")
    return index


def _parent(document: Any, tokens: list[str], path: str) -> Any:
    current = document
    for token in tokens[:-1]:
        if isinstance(current, dict):
            if token not in current:
                raise PatchError(f"doc is missing path: {path!r}: missing value")
            current = current[token]
        elif isinstance(current, list):
            current = current[_array_index(token, len(current), allow_end=False)]
        else:
            raise PatchError(f"doc is missing path: {path!r}: missing value")
    return current


def _get(document: Any, path: str, *, verb: str, missing_ok: bool = False) -> Any:
    tokens = _tokens(path)
    if not tokens:
        return document
    parent = _parent(document, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            if missing_ok:
                return None
            raise PatchError(f"unable to {verb} nonexistent key: {last}: missing value")
        return parent[last]
    if isinstance(parent, list):
        return parent[_array_index(last, len(parent), allow_end=False)]
    raise PatchError(f"doc is missing path: {path!r}: missing value")


def _add(document: Any, path: str, value: Any) -> Any:
    tokens = _tokens(path)
    if not tokens:
        return value
    parent = _parent(document, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchError(f"doc is missing path: {path!r}: missing value")
    return document


def _remove(document: Any, path: str, *, verb: str = "remove") -> tuple[Any, Any]:
    tokens = _tokens(path)
    if not tokens:
        return None, document
    parent = _parent(document, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to {verb} nonexistent key: {last}: missing value")
        return document, parent.pop(last)
    if isinstance(parent, list):
        return document, parent.pop(_array_index(last, len(parent), allow_end=False))
    raise PatchError(f"doc is missing path: {path!r}: missing value")
