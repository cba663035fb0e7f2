"""Who owns which fields after a write: the verbs' side of ``metadata.managedFields``.

:mod:`kube_emulator.managedfields` knows field sets, ownership entries and apply conflicts; this module
connects it to a write: the manager a request names (:class:`~kube_emulator.writes.WriteOptions`), the
schema that says how a kind's lists merge (:func:`ownership_root`), and the moment of the write. An update
records what its manager changed (:func:`track`); a server-side apply settles ownership and conflicts
before its body is merged (:func:`settle_apply`).
"""

from __future__ import annotations

from kube_emulator import managedfields
from kube_emulator.clock import Clock, format_time
from kube_emulator.jsonutil import JsonObject
from kube_emulator.resources import ResourceType
from kube_emulator.strategic_merge import schema_for
from kube_emulator.writes import WriteOptions


def ownership_root(resource_type: ResourceType) -> managedfields.Node:
    if resource_type.builtin:
        return managedfields.Node(strategic=schema_for(resource_type.storage_key))
    return managedfields.Node(schema=resource_type.schema or {})


def track(
    resource_type: ResourceType,
    old: JsonObject | None,
    new: JsonObject,
    options: WriteOptions,
    subresource: str,
    clock: Clock,
) -> None:
    """Record in ``new`` who owns which fields after this write (see :mod:`.managedfields`)."""
    if options.managed is not None:
        managedfields.write_entries(new, options.managed)
        return
    if options.field_manager is None and not (old is not None and old["metadata"].get("managedFields")):
        return
    entries = managedfields.read_entries(old) if old is not None else []
    managedfields.record_update(
        entries,
        old,
        new,
        ownership_root(resource_type),
        manager=options.manager(),
        subresource=subresource,
        api_version=resource_type.api_version,
        time=format_time(clock.now()),
    )
    managedfields.write_entries(new, entries)


def settle_apply(
    resource_type: ResourceType,
    live: JsonObject | None,
    applied: JsonObject,
    options: WriteOptions,
    subresource: str,
    clock: Clock,
) -> set[managedfields.FieldPath]:
    """Settle a server-side apply's ownership (409 on a conflict unless forced) into ``options.managed``;
    returns the fields the manager stopped applying that nobody else owns (the apply removes them)."""
    entries = managedfields.read_entries(live) if live is not None else []
    stale = managedfields.plan_apply(
        entries,
        live,
        applied,
        ownership_root(resource_type),
        manager=options.manager(),
        subresource=subresource,
        force=options.force,
        api_version=resource_type.api_version,
        time=format_time(clock.now()),
    )
    options.managed = entries
    return stale
