"""Field ownership (``metadata.managedFields``) and server-side apply's conflicts between managers.

A simplified structured-merge-diff, with its rules where clients can see them:

* a field is a path of ``f:<name>`` (map fields), ``k:{"name":"app"}`` (an item of an associative list,
  keyed by its merge keys) and ``v:<json>`` (a member of a set list); an atomic list is one field;
* an **apply** (``application/apply-patch+yaml``) makes its manager own exactly the fields of its applied
  configuration; changing a field that another manager owns to a different value is a 409 conflict unless
  ``force=true`` takes it over; fields the manager applied before and no longer does are removed, unless
  another manager owns them too;
* an **update** (create, PUT, any other PATCH) makes its manager own the fields it changed, taking them from
  the others without conflict;
* list semantics come from the strategic-merge keys of built-in kinds and the ``x-kubernetes-list-type``/
  ``x-kubernetes-list-map-keys`` of a CRD's schema (lists without them are atomic).

Identity and server-set metadata, ``apiVersion``/``kind`` and (outside ``/status``) a status subresource are
nobody's fields. Tracking starts with the first write that names a ``fieldManager`` (kubectl always does);
objects only ever written by clients that name none stay without ``managedFields``, as the service's own
objects would be costlier to serve otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kube_emulator.errors import ApiError
from kube_emulator.jsonutil import JsonObject
from kube_emulator.strategic_merge import ANY, Schema

FieldPath = tuple[str, ...]
_OWNED_METADATA = frozenset({"labels", "annotations", "finalizers", "ownerReferences"})


# --- list semantics ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    """Where in a kind's schema a value sits: a strategic-merge schema (built-ins) or a JSON schema (CRDs)."""

    strategic: Schema | None = None
    schema: JsonObject | None = None

    def child(self, key: str) -> Node:
        if self.strategic is not None:
            return Node(strategic=self.strategic.fields.get(key, ANY))
        schema = self.schema or {}
        found = (schema.get("properties") or {}).get(key)
        if found is None and isinstance(schema.get("additionalProperties"), dict):
            found = schema["additionalProperties"]
        return Node(schema=found or {})

    def item(self) -> Node:
        if self.strategic is not None:
            return Node(strategic=self.strategic.items or ANY)
        return Node(schema=(self.schema or {}).get("items") or {})

    def list_kind(self) -> tuple[str, tuple[str, ...]]:
        """``("map", keys)``, ``("set", ())`` or ``("atomic", ())``."""
        if self.strategic is not None:
            if self.strategic.merge_key:
                return "map", (self.strategic.merge_key,)
            return ("set", ()) if self.strategic.set_merge else ("atomic", ())
        schema = self.schema or {}
        kind = schema.get("x-kubernetes-list-type")
        if kind == "map":
            return "map", tuple(schema.get("x-kubernetes-list-map-keys") or ())
        return ("set", ()) if kind == "set" else ("atomic", ())


def _key_element(item: Any, keys: tuple[str, ...]) -> str:
    found = {key: item.get(key) for key in keys} if isinstance(item, dict) else {}
    return "k:" + json.dumps(found, separators=(",", ":"), sort_keys=True)


def _collect(value: Any, node: Node, path: FieldPath, out: set[FieldPath]) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _collect(child, node.child(key), (*path, f"f:{key}"), out)
        return
    if isinstance(value, list) and value:
        kind, keys = node.list_kind()
        if kind == "map" and keys:
            for item in value:
                item_path = (*path, _key_element(item, keys))
                out.add(item_path)
                _collect(item, node.item(), item_path, out)
            return
        if kind == "set":
            out.update((*path, "v:" + json.dumps(item, separators=(",", ":"))) for item in value)
            return
    out.add(path)


def fields_of(obj: JsonObject, root: Node, *, status: bool) -> set[FieldPath]:
    """The fields an object (or an applied configuration) sets: under ``status`` only, or all but status."""
    out: set[FieldPath] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (key == "status") != status:
            continue
        if key == "metadata":
            for meta_key in _OWNED_METADATA & set(value if isinstance(value, dict) else ()):
                _collect(value[meta_key], root.child("metadata").child(meta_key), ("f:metadata", f"f:{meta_key}"), out)
            continue
        _collect(value, root.child(key), (f"f:{key}",), out)
    return out


def _find(container: Any, element: str) -> tuple[bool, Any]:
    kind, _, rest = element.partition(":")
    if kind == "f":
        return (True, container[rest]) if isinstance(container, dict) and rest in container else (False, None)
    if not isinstance(container, list):
        return False, None
    wanted = json.loads(rest)
    for item in container:
        if kind == "v" and item == wanted:
            return True, item
        if kind == "k" and isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items()):
            return True, item
    return False, None


def value_at(obj: Any, path: FieldPath) -> tuple[bool, Any]:
    current = obj
    for element in path:
        found, current = _find(current, element)
        if not found:
            return False, None
    return True, current


def remove(obj: Any, path: FieldPath) -> None:
    """Delete the field at ``path`` from ``obj`` (a private copy), if it is there."""
    found, parent = value_at(obj, path[:-1])
    if not found:
        return
    kind, _, rest = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif isinstance(parent, list):
        present, item = _find(parent, path[-1])
        if present:
            parent.remove(item)


# --- FieldsV1 -----------------------------------------------------------------------------------------


def to_fields_v1(paths: Iterable[FieldPath]) -> JsonObject:
    tree: JsonObject = {}
    listed = set(paths)
    for path in sorted(listed):
        node = tree
        for depth, element in enumerate(path):
            node = node.setdefault(element, {})
            if depth < len(path) - 1 and path[: depth + 1] in listed:
                node.setdefault(".", {})
    return tree


def from_fields_v1(tree: JsonObject, prefix: FieldPath = ()) -> set[FieldPath]:
    paths: set[FieldPath] = set()
    for element, children in tree.items():
        if element == ".":
            paths.add(prefix)
            continue
        path = (*prefix, element)
        if children:
            paths |= from_fields_v1(children, path)
        else:
            paths.add(path)
    return paths


def path_string(path: FieldPath) -> str:
    """``fieldpath.Path.String()``: ``.spec.containers[name="app"].image``."""
    text = ""
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            text += f".{rest}"
        elif kind == "k":
            keys = json.loads(rest)
            text += "[" + ",".join(f"{key}={json.dumps(value)}" for key, value in sorted(keys.items())) + "]"
        else:
            text += f"[={rest}]"
    return text


# --- ownership ----------------------------------------------------------------------------------------


@dataclass
class Entry:
    manager: str
    operation: str
    api_version: str
    time: str
    fields: set[FieldPath]
    subresource: str = ""

    def key(self) -> tuple[str, str, str]:
        return self.manager, self.operation, self.subresource

    def as_json(self) -> JsonObject:
        entry: JsonObject = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.fields),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry

    def describe(self) -> str:
        """How a conflict names the manager (``printManager``)."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version} at {self.time}"
        return text


def read_entries(obj: JsonObject) -> list[Entry]:
    entries = []
    for raw in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict):
            continue
        entries.append(
            Entry(
                manager=str(raw.get("manager", "")),
                operation=str(raw.get("operation", "Update")),
                api_version=str(raw.get("apiVersion", "")),
                time=str(raw.get("time", "")),
                fields=from_fields_v1(raw.get("fieldsV1") or {}),
                subresource=str(raw.get("subresource", "")),
            )
        )
    return entries


def write_entries(obj: JsonObject, entries: list[Entry]) -> None:
    kept = [entry.as_json() for entry in entries if entry.fields]
    if kept:
        obj["metadata"]["managedFields"] = kept
    else:
        obj["metadata"].pop("managedFields", None)


def _entry(entries: list[Entry], manager: str, operation: str, subresource: str, api_version: str, time: str) -> Entry:
    for entry in entries:
        if entry.key() == (manager, operation, subresource):
            entry.api_version, entry.time = api_version, time
            return entry
    created = Entry(manager, operation, api_version, time, set(), subresource)
    entries.append(created)
    return created


def record_update(
    entries: list[Entry],
    old: JsonObject | None,
    new: JsonObject,
    root: Node,
    *,
    manager: str,
    subresource: str,
    api_version: str,
    time: str,
) -> None:
    """An update: ``manager`` owns what it changed; the others lose it."""
    status = subresource == "status"
    before = fields_of(old, root, status=status) if old is not None else set()
    after = fields_of(new, root, status=status)
    changed = {path for path in after if path not in before or value_at(old, path) != value_at(new, path)}
    gone = before - after
    for entry in entries:
        entry.fields -= changed | gone
    if changed:
        _entry(entries, manager, "Update", subresource, api_version, time).fields |= changed


def apply_conflicts(
    entries: list[Entry],
    live: JsonObject,
    applied: JsonObject,
    applied_fields: set[FieldPath],
    manager: str,
    subresource: str,
) -> list[tuple[Entry, FieldPath]]:
    """Fields of the applied configuration that differ from the live object and that others own."""
    conflicts = []
    for path in sorted(applied_fields):
        present, current = value_at(live, path)
        if not present or (True, current) == value_at(applied, path):
            continue
        for entry in entries:
            if entry.key() != (manager, "Apply", subresource) and path in entry.fields:
                conflicts.append((entry, path))
    return conflicts


def conflict_error(conflicts: list[tuple[Entry, FieldPath]]) -> ApiError:
    """The API server's 409 for an apply that conflicts (``NewApplyConflict``)."""
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {entry.describe()}", "field": path_string(path)}
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.describe(), []).append(path_string(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {path}" for path in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, details={"causes": causes})


def plan_apply(
    entries: list[Entry],
    live: JsonObject | None,
    applied: JsonObject,
    root: Node,
    *,
    manager: str,
    subresource: str,
    force: bool,
    api_version: str,
    time: str,
) -> set[FieldPath]:
    """Settle an apply's ownership in ``entries``; returns the fields it stopped applying that nobody else
    owns (to be removed from the object). Raises the 409 conflict unless ``force``."""
    applied_fields = fields_of(applied, root, status=subresource == "status")
    conflicts = apply_conflicts(entries, live, applied, applied_fields, manager, subresource) if live else []
    if conflicts and not force:
        raise conflict_error(conflicts)
    for entry, path in conflicts:
        entry.fields.discard(path)
    mine = _entry(entries, manager, "Apply", subresource, api_version, time)
    others = set().union(*(entry.fields for entry in entries if entry is not mine))
    stale = {path for path in mine.fields - applied_fields if path not in others}
    mine.fields = applied_fields
    return stale
