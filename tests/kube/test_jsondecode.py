"""Decoding the API server's JSON: an object nested too deeply for ``json.loads`` is cut below the limit the
parsers check (tests/parsers/test_limits.py), and the tolerant decoder decodes what orjson does."""

from __future__ import annotations

import json

import pytest

from autoscaler.kube.jsondecode import MAX_DEPTH as DECODED_LEVELS
from autoscaler.kube.jsondecode import TOO_DEEP, loads, tolerant_loads
from autoscaler.values.limits import MAX_DEPTH
from tests.parsers.test_limits import problems


def test_json_too_deep_for_the_decoders_is_cut_below_the_limit() -> None:
    body = json.dumps({"metadata": {"name": "deep"}, "spec": {"x": 'a]}[{\\"', "n": 10**30, "hvpa": "HERE"}})
    body = body.replace('"HERE"', "[" * 5000 + "1" + "]" * 5000)
    with pytest.raises(RecursionError):
        json.loads(body)
    obj = loads(body.encode())
    assert obj["metadata"] == {"name": "deep"} and obj["spec"]["x"] == 'a]}[{\\"'  # brackets in strings kept
    assert obj["spec"]["n"] == 10**30  # beyond 64 bits (orjson's limit), kept exact
    levels, value = 2, obj["spec"]["hvpa"]  # spec.hvpa is the object's level 3
    while isinstance(value, list):
        levels, value = levels + 1, value[0]
    assert (levels, value) == (DECODED_LEVELS, TOO_DEEP)  # the container that would be level 257 is cut
    assert problems(obj["spec"], level=2)[0].startswith("spec.hvpa" + "[0]" * (MAX_DEPTH - 2) + ": nested too deeply")


def test_the_tolerant_decoder_decodes_what_orjson_does() -> None:
    text = '{"a": [1, {"b": "[[[["}], "c": {}, "d": 1.5e3, "e": null, "f": true, "g": "\\u00e9"}'
    assert tolerant_loads(text) == json.loads(text)
    with pytest.raises(ValueError):
        tolerant_loads('{"a": [1,]}')
