"""Converted targets as YAML, each under a comment block that says where it came from and what
changed or did not carry over; the same notes, one a line, for stderr."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.convert.model import Conversion, NoteKind
from autoscaler.values.yaml_files import dump_yaml


def _comment(text: str) -> list[str]:
    return [f"# {line}".rstrip() for line in text.splitlines() or [""]]


def comment_block(text: str) -> str:
    """``text`` (the backends fragment) as YAML comments, under a line that says how to take it out."""
    lines = [
        "# ---- The service's settings fragment these targets need (use --backends-file FILE to write it as a",
        "# ---- file; here each of its lines is commented out so that this stream stays objects to apply):",
        *(f"#   {line}".rstrip() for line in text.splitlines()),
    ]
    return "\n".join(lines) + "\n"


def header(conversion: Conversion, adapter_source: str | None) -> list[str]:
    origin = conversion.origin
    lines = [f"Converted by `autoscaler convert` from {origin.label} ({origin.source})."]
    if adapter_source and origin.kind == "HorizontalPodAutoscaler":
        lines.append(f"Queries from prometheus-adapter's configuration in {adapter_source}.")
    if conversion.old_hpa:
        lines.append(
            f"The old autoscaler's decisions: HPA {origin.namespace}/{conversion.old_hpa} "
            "(`--compare` reads them from kube-state-metrics)."
        )
    for kind in (NoteKind.CHANGED, NoteKind.LOST):
        notes = [n for n in conversion.notes if n.kind is kind]
        if notes:
            lines.append(f"{kind.value.capitalize()}:")
            lines.extend(f"  - {note}" for note in notes)
    return [line for text in lines for line in _comment(text)]


def render_target(conversion: Conversion, adapter_source: str | None) -> str:
    assert conversion.target is not None
    body = dump_yaml(conversion.target)
    return "\n".join([*header(conversion, adapter_source), body.rstrip("\n")]) + "\n"


def render_all(conversions: Sequence[Conversion], adapter_source: str | None) -> str:
    return "---\n".join(render_target(c, adapter_source) for c in conversions if c.target is not None)


def file_name(conversion: Conversion) -> str:
    origin = conversion.origin
    prefix = "keda-" if origin.kind == "ScaledObject" else ""
    return f"{origin.namespace}.{prefix}{origin.name}.yaml"


def stderr_lines(conversion: Conversion, *, strict: bool) -> list[str]:
    """What stderr says about one object: its errors, and every note — each change (where or how a metric is
    read, what decides differently) and each loss (an error with --strict)."""
    label = f"{conversion.origin.source}: {conversion.origin.label}"
    lines = [f"{label}: error: {error}" for error in conversion.errors]
    for note in conversion.notes:
        if note.kind is NoteKind.LOST:
            lines.append(f"{label}: {'error' if strict else 'warning'}: not converted: {note}")
        else:
            lines.append(f"{label}: changed: {note}")
    return lines
