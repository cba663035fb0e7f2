"""Reading objects to seed from YAML/JSON: multi-document files and ``kind: List`` documents.

CustomResourceDefinitions are ordered first so that instances in the same file can be stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kube_emulator.jsonutil import JsonObject


def parse_documents(text: str) -> list[JsonObject]:
    """Every object in a YAML (or JSON) text, with ``List`` documents expanded."""
    objects: list[JsonObject] = []
    for document in yaml.safe_load_all(text):
        objects.extend(_expand(document))
    return objects


def load_documents(path: str | Path) -> list[JsonObject]:
    return parse_documents(Path(path).read_text())


def _expand(document: Any) -> Iterable[JsonObject]:
    if document is None:
        return []
    if isinstance(document, list):
        return [item for element in document for item in _expand(element)]
    if not isinstance(document, dict):
        raise ValueError(f"expected a Kubernetes object, got {type(document).__name__}")
    if str(document.get("kind", "")).endswith("List") and isinstance(document.get("items"), list):
        return [item for element in document["items"] for item in _expand(element)]
    return [document]


def crds_first(objects: Iterable[JsonObject]) -> list[JsonObject]:
    ordered = list(objects)
    ordered.sort(key=lambda obj: 0 if obj.get("kind") == "Namespace" else 1)
    ordered.sort(key=lambda obj: 0 if obj.get("kind") == "CustomResourceDefinition" else 1)
    return ordered
