"""Reading plot files in tests: PNG text chunks (no pixels) and the data embedded in HTML."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunks(path: Path) -> tuple[tuple[int, int], dict[str, str]]:
    """The image's (width, height) and its text chunks (tEXt, zTXt, iTXt)."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    position, size, texts = 8, (0, 0), {}
    while position < len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            size = (int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big"))
        elif kind == b"tEXt":
            key, value = body.split(b"\0", 1)
            texts[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, value = body.split(b"\0", 1)
            texts[key.decode("latin-1")] = zlib.decompress(value[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, rest = body.split(b"\0", 1)
            compressed, rest = rest[0], rest[2:]
            _, rest = rest.split(b"\0", 1)
            _, text = rest.split(b"\0", 1)
            texts[key.decode("latin-1")] = (zlib.decompress(text) if compressed else text).decode("utf-8")
        position += 12 + length
    return size, texts


def png_series(path: Path) -> list[dict[str, Any]]:
    _, texts = png_chunks(path)
    series: list[dict[str, Any]] = json.loads(texts["autoscaler:series"])
    return series


def html_data(path: Path) -> dict[str, Any]:
    page = path.read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="autoscaler-plot-data">(.*?)</script>', page, re.S)
    assert match is not None, "no embedded plot data"
    data: dict[str, Any] = json.loads(match.group(1))
    return data
