"""Reading an error answer's body from the API server, a bounded head of it and no more.

A successful answer is read whole: a LIST page or an object is what the service asked for, and the API
server bounds it (objects of ~1.5 MiB, pages of 500). An error answer's body is only there to say what
went wrong, yet nothing bounds it: a proxy in front of the API server, an aggregated API server or a
webhook can answer with megabytes (a LIST answered 500 with a 30 MB body, read whole every retry and
repeated by each cache's error, took the service to 1.26 GiB). So of an error answer the service reads at
most :data:`ERROR_BODY_LIMIT` bytes; when more follow, the connection is closed instead of read to its end
(its body half read, it cannot serve another request), and the head ends with a note of what was cut.

Two paths read bodies: :class:`~autoscaler.kube.api.KubeApi` reads its answers itself (through
:func:`read_error_body`), and kubernetes-asyncio's generated API classes (the Lease's requests) read theirs
with ``ClientResponse.read()``, which :class:`CappedErrorResponse` — the response class of the session
:func:`~autoscaler.kube.client.make_api_client` builds, an aiohttp hook — bounds the same way.
"""

from __future__ import annotations

import aiohttp

__all__ = ["ERROR_BODY_LIMIT", "UNKNOWN", "CappedErrorResponse", "cut_note", "is_error", "read_error_body"]

# A Status from a real API server is well under this (an admission webhook's refusal runs to a few KiB).
ERROR_BODY_LIMIT = 64 * 1024
UNKNOWN = -1  # bytes left unread, of a body whose length was not announced (chunked)


def is_error(status: int) -> bool:
    """Whether an answer of this HTTP status is not a success (its body only says what went wrong)."""
    return not 200 <= status <= 299


async def read_error_body(response: aiohttp.ClientResponse, limit: int = ERROR_BODY_LIMIT) -> tuple[bytes, int]:
    """At most ``limit`` bytes of ``response``'s body, and how many bytes were left unread (0: none;
    :data:`UNKNOWN`: some, of a body whose length was not announced). A response read in part is closed:
    its connection does not go back to the pool."""
    head = bytearray()
    content = response.content
    while len(head) < limit:
        chunk = await content.read(limit - len(head))
        if not chunk:
            return bytes(head), 0
        head += chunk
    length = response.content_length
    if content.at_eof() or (length is not None and length <= len(head)):
        return bytes(head), 0
    response.close()
    return bytes(head), length - len(head) if length is not None else UNKNOWN


def cut_note(unread: int, dropped: int = 0) -> str:
    """The note ending a body's head: ``unread`` bytes were not read (:data:`UNKNOWN`: an unknown number),
    ``dropped`` more were read but are not shown; ``""`` when the head is the whole body."""
    if unread == UNKNOWN:
        return f"… (more than {dropped:,} bytes cut)" if dropped else "… (the rest cut)"
    return f"… ({unread + dropped:,} bytes cut)" if unread + dropped else ""


class CappedErrorResponse(aiohttp.ClientResponse):
    """An aiohttp response whose :meth:`read` reads at most :data:`ERROR_BODY_LIMIT` bytes of an error
    answer's body (the head, with :func:`cut_note`'s note appended when the rest was not read); a success
    is read whole."""

    _capped_body: bytes | None = None

    async def read(self) -> bytes:
        if not is_error(self.status):
            return await super().read()
        if self._capped_body is None:
            head, unread = await read_error_body(self)
            self._capped_body = head + cut_note(unread).encode()
            if not unread:
                self.release()
        return self._capped_body
