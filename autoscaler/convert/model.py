"""What a conversion produces: the target, and every note about what changed or did not carry over."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class NoteKind(enum.StrEnum):
    CHANGED = "changed"  # carried over, with a difference the reader should know about
    LOST = "not converted"  # dropped: --strict makes it an error


@dataclass(frozen=True, slots=True)
class Note:
    kind: NoteKind
    path: str  # the field of the source object it is about (spec.triggers[1].metadata.query)
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class Origin:
    """The object converted: kind, where it lives, and the file (or cluster) it was read from."""

    kind: str
    namespace: str
    name: str
    source: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass
class Conversion:
    """One source object converted (``target`` is None when it could not be).

    ``old_hpa`` names the HPA whose kube-state-metrics series record what the old autoscaler did:
    the HPA itself, or the one KEDA made for a ScaledObject."""

    origin: Origin
    target: dict[str, Any] | None = None
    notes: list[Note] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    old_hpa: str = ""

    def changed(self, path: str, message: str) -> None:
        self.notes.append(Note(NoteKind.CHANGED, path, message))

    def lost(self, path: str, message: str) -> None:
        self.notes.append(Note(NoteKind.LOST, path, message))

    @property
    def losses(self) -> list[Note]:
        return [n for n in self.notes if n.kind is NoteKind.LOST]
