"""Sorting the input: HPAs, ScaledObjects (with the TriggerAuthentications they name) and the adapter's
configuration, from files or the cluster.

Every document of every file is looked at (``List`` objects are opened); an HPA that KEDA made for a
ScaledObject is skipped, since the ScaledObject is converted instead. Anything else is named on
stderr as ignored, never dropped unsaid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.convert.adapter_config import (
    AdapterConfig,
    is_adapter_config,
    is_adapter_configmap,
    read_adapter_config,
    read_adapter_configmap,
)
from autoscaler.convert.hpa import convert_hpa
from autoscaler.convert.keda import convert_scaled_object
from autoscaler.convert.keda_auth import AUTH_KINDS, KEY_VALUE_KINDS, AuthIndex
from autoscaler.convert.keda_backends import BackendRegistry
from autoscaler.convert.model import Conversion
from autoscaler.values.fields import ErrorList


@dataclass
class Inputs:
    objects: list[tuple[Mapping[str, Any], str]] = field(default_factory=list)  # (document, source)
    adapters: list[tuple[AdapterConfig | None, str, list[str]]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    auths: AuthIndex = field(default_factory=AuthIndex)  # KEDA's (Cluster)TriggerAuthentications
    backends: BackendRegistry = field(default_factory=BackendRegistry)  # what the prometheus triggers read


def _flatten(document: object) -> Iterable[object]:
    # kind: List, and the typed lists kubectl prints (HorizontalPodAutoscalerList…)
    if (
        isinstance(document, Mapping)
        and str(document.get("kind", "")).endswith("List")
        and isinstance(document.get("items"), list)
    ):
        yield from document["items"]
    else:
        yield document


def _keda_owned(document: Mapping[str, Any]) -> bool:
    owners = (document.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(o, Mapping) and o.get("kind") == "ScaledObject" for o in owners)


def _describe(document: object) -> str:
    if isinstance(document, Mapping):
        metadata = document.get("metadata") or {}
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        return f"{document.get('kind') or 'a document without kind'}{f' {name}' if name else ''}"
    return f"a {type(document).__name__}"


def sort_documents(documents: Iterable[tuple[object, str]], inputs: Inputs) -> None:
    """Add each ``(document, source)`` to ``inputs`` by what it is."""
    for raw, source in documents:
        for document in _flatten(raw):
            if is_adapter_config(document):
                errors = ErrorList()
                config = read_adapter_config(document, source, errors)
                inputs.adapters.append((config, source, [str(e) for e in errors.items]))
            elif is_adapter_configmap(document):
                assert isinstance(document, Mapping)
                errors = ErrorList()
                config = read_adapter_configmap(document, source, errors)
                inputs.adapters.append(
                    (
                        config,
                        f"{source} (ConfigMap {_describe(document).split(' ', 1)[-1]})",
                        [str(e) for e in errors.items],
                    )
                )
            elif isinstance(document, Mapping) and document.get("kind") == "HorizontalPodAutoscaler":
                if _keda_owned(document):
                    inputs.ignored.append(
                        f"{source}: {_describe(document)}: made by KEDA for a ScaledObject (convert the ScaledObject)"
                    )
                else:
                    inputs.objects.append((document, source))
            elif isinstance(document, Mapping) and document.get("kind") == "ScaledObject":
                inputs.objects.append((document, source))
            elif isinstance(document, Mapping) and document.get("kind") in AUTH_KINDS:
                inputs.auths.add(document)
            elif (
                isinstance(document, Mapping)
                and document.get("kind") in KEY_VALUE_KINDS
                and document.get("apiVersion") == "v1"
            ):  # looked up for the few TriggerAuthentication parameters that are no credential (keda_auth.READABLE)
                inputs.auths.add(document)
            else:
                inputs.ignored.append(
                    f"{source}: {_describe(document)}: neither an HPA, a ScaledObject, a "
                    "(Cluster)TriggerAuthentication, a v1 ConfigMap or Secret nor prometheus-adapter's "
                    "configuration: ignored"
                )


def convert_all(
    inputs: Inputs, adapter: AdapterConfig | None, known_series: frozenset[str] | None = None
) -> list[Conversion]:
    conversions = []
    for document, source in inputs.objects:
        if document.get("kind") == "ScaledObject":
            conversions.append(convert_scaled_object(document, source, inputs.auths, inputs.backends))
        else:
            conversions.append(convert_hpa(document, source, adapter, known_series))
    return conversions
