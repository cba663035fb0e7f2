"""Text that another party wrote, cut to a size the service can repeat.

An error's text comes from a server (a Status message, an HTML page from a proxy in front of it) and is
repeated by the service in logs, probes, conditions and Events. A server can send megabytes of it; each
place that repeats it keeps a head of a bounded size and says how much it left out.
"""

from __future__ import annotations

__all__ = ["clip"]


def clip(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters; else its first ``limit`` characters and a note
    of how many more there were, ``… (N characters cut)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} characters cut)"
