"""Kubernetes timestamps (RFC 3339, UTC) to and from Unix seconds."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(seconds: float, *, fraction: bool = False) -> str:
    """``metav1.Time`` (whole seconds) or, with ``fraction``, ``metav1.MicroTime``."""
    moment = datetime.fromtimestamp(seconds, UTC)
    if fraction:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: object) -> float | None:
    """Unix seconds, or None for anything that is not an RFC 3339 time."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
