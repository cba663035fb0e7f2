"""Request bodies: which media types each verb accepts, and turning a body into JSON values.

The API server negotiates the body's serializer from ``Content-Type`` and answers 415 Unsupported Media
Type for anything else (an object or DeleteOptions without the header is read as JSON; a patch without
one is a 415). Objects
may come as JSON, YAML or Kubernetes protobuf (what kubectl's typed clients send for built-in kinds,
decoded in :mod:`kube_emulator.protobuf`); patches as one of the patch types; DeleteOptions as JSON
or YAML.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from kube_emulator import errors
from kube_emulator.patches import APPLY_PATCH

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"

OBJECT_TYPES: tuple[str, ...] = (JSON, YAML, PROTOBUF)
"""What a create or an update accepts (the real server's order)."""
OPTIONS_TYPES: tuple[str, ...] = (JSON, YAML)
"""What a DELETE body (DeleteOptions) may be written in here."""


def decode(raw: bytes, content_type: str, accepted: Sequence[str], *, required: bool) -> Any:
    """The body as JSON values, ``None`` for an allowed empty body; 415 for a type not in ``accepted``."""
    if not raw.strip():
        if required:
            raise errors.bad_request("the body of the request was empty")
        return None
    if content_type not in accepted:
        raise errors.unsupported_media_type(content_type, accepted)
    if content_type == PROTOBUF:
        from kube_emulator.protobuf import decode_object  # imported on use: most clients send JSON

        return decode_object(raw)
    try:
        if content_type == APPLY_PATCH or content_type.endswith("yaml"):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as problem:
        raise errors.bad_request(f"the body of the request could not be decoded: {problem}") from problem
