"""Targets: ``ScalingTarget`` objects from the cluster (the CRD) or from a YAML file (standalone).

A target object is parsed once per change into a :class:`Target`: its identity, its validated spec or
the list of everything wrong with it, and the status it carried when read (which is where a restarted
service finds the decision history).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from autoscaler.core.other_autoscalers import TAKE_OVER_ANNOTATION
from autoscaler.core.pause_spec import pause_annotation_items
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.kube.api import ResourcePath
from autoscaler.values.fields import ErrorList, FieldError, SpecError, type_name
from autoscaler.values.limits import check_document
from autoscaler.values.timestamps import parse_rfc3339
from autoscaler.values.yaml_files import load_yaml_documents

GROUP = "autoscaler.dev"
VERSION = "v1alpha1"
KIND = "ScalingTarget"
API_VERSION = f"{GROUP}/{VERSION}"
TARGETS = ResourcePath(GROUP, VERSION, "scalingtargets")


@dataclass(frozen=True)
class TargetText:
    """The target's spec and status as written, as text."""

    spec_json: str = ""  # the spec as written (canonical JSON): an edit restarts the reconciler
    # The status the object carried, as compact JSON: it is read only when a reconciler starts (the
    # decision history of a restarted service or a new leader), and as text it costs a fraction of the
    # parsed document. It takes part in equality: a status-only change (another leader's write) must
    # reach the manager, or a later leader would start from a history older than the server's (D3).
    status_json: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class TargetMetadata:
    """What every sync reads of the object's metadata besides its identity (none of it restarts the reconciler)."""

    # TAKE_OVER_ANNOTATION "true": the cut-over is agreed, the target scales as soon as the other autoscaler
    # that held it is gone (service/cluster/other_autoscalers.py).
    take_over: bool = False
    # metadata.creationTimestamp (Unix seconds; None when absent, as in a targets file without it): what
    # spec.activation.initialCooldownSeconds counts from. It never changes for one object (uid).
    created: float | None = None
    # The autoscaler.dev/paused* annotations (core/pause_spec.py), as (name, value) pairs: read by every sync,
    # so that a pause set with kubectl annotate takes effect without a restart.
    pause_annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Target:
    namespace: str
    name: str
    uid: str
    generation: int | None
    spec: TargetSpec | None
    errors: tuple[FieldError, ...] = ()
    text: TargetText = TargetText()
    metadata: TargetMetadata = TargetMetadata()

    @property
    def status(self) -> Mapping[str, Any] | None:
        """The status the object carried when read (a fresh copy on every access)."""
        if self.text.status_json is None:
            return None
        status: Mapping[str, Any] = json.loads(self.text.status_json)
        return status

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def valid(self) -> bool:
        return self.spec is not None

    def same_spec(self, other: Target) -> bool:
        """Whether a change of ``other`` needs no restart of this target's reconciler."""
        return (self.uid, self.generation, self.text.spec_json) == (other.uid, other.generation, other.text.spec_json)


def target_from_object(
    obj: Mapping[str, Any], *, default_namespace: str = "default", known: Target | None = None
) -> Target:
    """A target from a ScalingTarget object as the API server (or a targets file) gives it; never raises.

    Whatever is wrong with the object makes this one target invalid, each problem with its path: its
    spec, and its spec and status against the depth and size limits (:mod:`autoscaler.values.limits`),
    checked before anything walks them. Its identity is read leniently (the API server validated it).

    ``known``: this object's target from an earlier version. When the object is the same one (uid) at the
    same ``metadata.generation`` — which the API server raises on every change of the spec — and that
    target was valid, its spec is taken as it is and only the status is read.
    """
    raw_meta = obj.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    namespace = _text(meta.get("namespace")) or default_namespace
    name = _text(meta.get("name"))
    generation = meta.get("generation")
    generation = generation if isinstance(generation, int) and not isinstance(generation, bool) else None
    uid = _text(meta.get("uid")) or f"{namespace}/{name}"
    raw_spec, status = obj.get("spec"), obj.get("status")
    if (
        known is not None
        and known.valid
        and generation is not None
        and (known.uid, known.generation, known.key) == (uid, generation, (namespace, name))
    ):
        status_problems = ErrorList()
        if check_document(status, "status", status_problems, level=2):
            return replace(
                known,
                text=TargetText(known.text.spec_json, _compact(status) if isinstance(status, Mapping) else None),
                metadata=TargetMetadata(
                    _takes_over(meta), known.metadata.created, pause_annotation_items(meta.get("annotations"))
                ),
            )
    problems = ErrorList()
    if raw_meta is not None and not isinstance(raw_meta, Mapping):
        problems.add("metadata", f"must be an object, not {type_name(raw_meta)}")
    # Levels counted from the object, as in a file of targets (its metadata is the API server's).
    spec_fits = check_document(raw_spec, "spec", problems, level=2)
    status_fits = check_document(status, "status", problems, level=2)
    spec: TargetSpec | None = None
    errors: tuple[FieldError, ...] = tuple(problems.items)
    if not problems:
        try:
            spec = parse_target_spec(raw_spec, "spec")
        except SpecError as exc:
            errors = exc.errors
    return Target(
        namespace,
        name,
        uid,
        generation,
        spec,
        errors,
        TargetText(
            # A spec past the limits is not written out (that walk is what the limits protect);
            # its text then only has to differ from any valid spec's.
            _canonical(raw_spec) if spec_fits else f"(invalid: {error_text(errors)})",
            _compact(status) if status_fits and isinstance(status, Mapping) else None,
        ),
        TargetMetadata(
            _takes_over(meta),
            parse_rfc3339(meta.get("creationTimestamp")),
            pause_annotation_items(meta.get("annotations")),
        ),
    )


def _takes_over(meta: Mapping[str, Any]) -> bool:
    annotations = meta.get("annotations")
    return isinstance(annotations, Mapping) and annotations.get(TAKE_OVER_ANNOTATION) == "true"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def compact_json(value: object) -> bytes:
    """Compact JSON: orjson's, a tenth of the standard library's time (every status write's echo is
    compacted here, and the reconciler keeps the status it wrote so); the standard library's for what
    orjson refuses (an integer past 64 bits, a key that is not a string)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value, separators=(",", ":")).encode()


def _compact(value: object) -> str:
    return compact_json(value).decode()


def load_targets_file(path: str, *, keep: Callable[[Mapping[str, str]], bool] | None = None) -> list[Target]:
    """Targets from a YAML file: ScalingTarget objects, one per document or in a ``List``.

    Raises :class:`SpecError` when the file is unreadable or an object is not a ScalingTarget with a
    name; an object whose spec is invalid is returned as an invalid target (it is reported, the others
    go on). ``keep``: only the objects whose labels it accepts are returned (a shard's, see
    :mod:`autoscaler.service.cluster.sharding`); every object is checked all the same.
    """
    documents = load_yaml_documents(path)
    objects: list[tuple[str, Any]] = []
    for index, document in enumerate(documents):
        if isinstance(document, Mapping) and document.get("kind") == "List":
            items = document.get("items")
            if not isinstance(items, list | None):
                objects.append((f"{path}[{index}].items", items))  # reported below: not an object
                continue
            objects += [(f"{path}[{index}].items[{i}]", item) for i, item in enumerate(items or [])]
        else:
            objects.append((f"{path}[{index}]", document))
    problems: list[FieldError] = []
    targets: list[Target] = []
    seen: set[tuple[str, str]] = set()
    for where, obj in objects:
        if not isinstance(obj, Mapping):
            what = "a list of ScalingTarget objects" if where.endswith(".items") else "a ScalingTarget object"
            problems.append(FieldError(where, f"must be {what}, not {type_name(obj)}"))
            continue
        if obj.get("kind") not in (KIND, None):
            problems.append(FieldError(f"{where}.kind", f'must be "{KIND}"'))
            continue
        identity = _identity_problems(obj.get("metadata"), f"{where}.metadata")
        if identity:
            problems += identity
            continue
        target = target_from_object(obj)
        if target.key in seen:
            problems.append(FieldError(f"{where}.metadata.name", f"duplicate target {target.namespace}/{target.name}"))
            continue
        seen.add(target.key)
        if keep is None or keep(obj["metadata"].get("labels") or {}):
            targets.append(target)
    if problems:
        raise SpecError(problems)
    return targets


def _identity_problems(meta: object, where: str) -> list[FieldError]:
    """What keeps a file's object from having a name (and a namespace, when it gives one)."""
    if meta is None:
        return [FieldError(f"{where}.name", "Required value")]
    if not isinstance(meta, Mapping):
        return [FieldError(where, f"must be an object, not {type_name(meta)}")]
    problems = []
    for key, required in (("name", True), ("namespace", False)):
        value = meta.get(key)
        if value is None or value == "":
            if required:
                problems.append(FieldError(f"{where}.{key}", "Required value"))
        elif not isinstance(value, str):
            problems.append(FieldError(f"{where}.{key}", f"must be a string, not {type_name(value)}"))
    labels = meta.get("labels")
    if labels is not None and not isinstance(labels, Mapping):
        problems.append(FieldError(f"{where}.labels", f"must be an object, not {type_name(labels)}"))
    elif labels is not None:
        problems += [
            FieldError(f"{where}.labels.{key}", f"must be a string, not {type_name(value)}")
            for key, value in labels.items()
            if not isinstance(value, str)
        ]
    return problems


MAX_SHOWN_ERRORS = 20  # in a condition's message: a status holds a summary, not a listing of thousands


def error_text(errors: Sequence[FieldError]) -> str:
    shown = "; ".join(str(e) for e in errors[:MAX_SHOWN_ERRORS])
    more = len(errors) - MAX_SHOWN_ERRORS
    return f"{shown}; and {more} more problem{'s' if more != 1 else ''}" if more > 0 else shown
