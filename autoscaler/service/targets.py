"""Targets: ``ScalingTarget`` objects from the cluster (the CRD) or from a YAML file (standalone).

A target object is parsed once per change into a :class:`Target`: its identity, its validated spec or
the list of everything wrong with it, and the status it carried when read (which is where a restarted
service finds the decision history).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.core.fields import FieldError, SpecError
from autoscaler.core.spec import TargetSpec
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.files import load_yaml_documents
from autoscaler.kube.api import ResourcePath

GROUP = "autoscaler.dev"
VERSION = "v1alpha1"
KIND = "ScalingTarget"
API_VERSION = f"{GROUP}/{VERSION}"
TARGETS = ResourcePath(GROUP, VERSION, "scalingtargets")


@dataclass(frozen=True)
class Target:
    namespace: str
    name: str
    uid: str
    generation: int | None
    spec: TargetSpec | None
    errors: tuple[FieldError, ...] = ()
    spec_json: str = ""  # the spec as written (canonical JSON): an edit restarts the reconciler
    # The status the object carried, as compact JSON: it is read only when a reconciler starts (the
    # decision history of a restarted service or a new leader), and as text it costs a fraction of the
    # parsed document. It takes part in equality: a status-only change (another leader's write) must
    # reach the manager, or a later leader would start from a history older than the server's (D3).
    status_json: str | None = field(default=None, repr=False)

    @property
    def status(self) -> Mapping[str, Any] | None:
        """The status the object carried when read (a fresh copy on every access)."""
        if self.status_json is None:
            return None
        status: Mapping[str, Any] = json.loads(self.status_json)
        return status

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def valid(self) -> bool:
        return self.spec is not None

    def same_spec(self, other: Target) -> bool:
        """Whether a change of ``other`` needs no restart of this target's reconciler."""
        return (self.uid, self.generation, self.spec_json) == (other.uid, other.generation, other.spec_json)


def target_from_object(obj: Mapping[str, Any], *, default_namespace: str = "default") -> Target:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or default_namespace)
    name = str(meta.get("name") or "")
    generation = meta.get("generation")
    raw_spec = obj.get("spec")
    try:
        spec: TargetSpec | None = parse_target_spec(raw_spec, "spec")
        errors: tuple[FieldError, ...] = ()
    except SpecError as exc:
        spec, errors = None, exc.errors
    status = obj.get("status")
    return Target(namespace, name, str(meta.get("uid") or f"{namespace}/{name}"),
                  generation if isinstance(generation, int) else None, spec, errors,
                  json.dumps(raw_spec, sort_keys=True, separators=(",", ":"), default=str),
                  json.dumps(status, separators=(",", ":")) if isinstance(status, Mapping) else None)


def load_targets_file(path: str) -> list[Target]:
    """Targets from a YAML file: ScalingTarget objects, one per document or in a ``List``.

    Raises :class:`SpecError` when the file is unreadable or an object is not a ScalingTarget with a
    name; an object whose spec is invalid is returned as an invalid target (it is reported, the others
    go on).
    """
    documents = load_yaml_documents(path)
    objects: list[tuple[str, Any]] = []
    for index, document in enumerate(documents):
        if isinstance(document, Mapping) and document.get("kind") == "List":
            objects += [(f"{path}[{index}].items[{i}]", item) for i, item in enumerate(document.get("items") or [])]
        else:
            objects.append((f"{path}[{index}]", document))
    problems: list[FieldError] = []
    targets: list[Target] = []
    seen: set[tuple[str, str]] = set()
    for where, obj in objects:
        if not isinstance(obj, Mapping):
            problems.append(FieldError(where, "must be a ScalingTarget object"))
            continue
        if obj.get("kind") not in (KIND, None):
            problems.append(FieldError(f"{where}.kind", f'must be "{KIND}"'))
            continue
        target = target_from_object(obj)
        if not target.name:
            problems.append(FieldError(f"{where}.metadata.name", "Required value"))
            continue
        if target.key in seen:
            problems.append(FieldError(f"{where}.metadata.name", f"duplicate target {target.namespace}/{target.name}"))
            continue
        seen.add(target.key)
        targets.append(target)
    if problems:
        raise SpecError(problems)
    return targets


def error_text(errors: Sequence[FieldError]) -> str:
    return "; ".join(str(e) for e in errors)
