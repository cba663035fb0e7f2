"""Kubernetes protobuf request bodies: what the emulator refuses rather than half-reads (kubectl's own bodies
are in test_kubectl.py)."""

from __future__ import annotations

import aiohttp
import pytest

from kube_emulator import KubeEmulator
from kube_emulator.errors import ApiError
from kube_emulator.protobuf import MAGIC, decode_object

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(number: int) -> bytes:
    out = b""
    while True:
        byte, number = number & 0x7F, number >> 7
        out += bytes([byte | (0x80 if number else 0)])
        if not number:
            return out


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field, written by hand so the test does not use the code it judges."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return MAGIC + _field(1, type_meta) + _field(2, raw)


def test_a_namespace_reads_as_its_json() -> None:
    raw = _field(1, _field(1, b"shop") + _field(11, _field(1, b"team") + _field(2, b"a")))
    assert decode_object(_envelope("v1", "Namespace", raw)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "shop", "labels": {"team": "a"}},
    }


def test_a_field_the_emulator_does_not_know_is_refused_not_dropped() -> None:
    raw = _field(1, _field(1, b"x")) + _field(90, b"?")
    with pytest.raises(ApiError) as caught:
        decode_object(_envelope("v1", "ConfigMap", raw))
    assert caught.value.code == 400 and "field 90 of ConfigMap" in caught.value.message


def test_a_kind_without_a_table_is_415_so_the_client_knows_to_send_json() -> None:
    with pytest.raises(ApiError) as caught:
        decode_object(_envelope("batch/v1", "Job", b""))
    assert caught.value.code == 415


async def test_a_protobuf_create_over_http(emulator: KubeEmulator) -> None:
    body = _envelope("v1", "ConfigMap", _field(1, _field(1, b"c")) + _field(2, _field(1, b"k") + _field(2, b"v")))
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            f"{emulator.url}/api/v1/namespaces/default/configmaps", data=body, headers={"Content-Type": PROTOBUF}
        )
        assert response.status == 201, await response.text()
    assert (emulator.get("cm", "c") or {})["data"] == {"k": "v"}


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a message (a reader written here, not the emulator's)."""
    found, position = [], 0
    while position < len(data):
        key, position = _read_varint(data, position)
        if key & 7 == 2:
            length, position = _read_varint(data, position)
            found.append((key >> 3, data[position : position + length]))
            position += length
        elif key & 7 == 0:
            _, position = _read_varint(data, position)
        else:
            position += 8 if key & 7 == 1 else 4
    return found


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


async def test_openapi_v2_comes_as_the_protobuf_older_kubectl_asks_for(emulator: KubeEmulator) -> None:
    from tests.service.cluster import CRD

    emulator.install_crd(CRD)
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    async with aiohttp.ClientSession() as session:
        response = await session.get(f"{emulator.url}/openapi/v2", headers={"Accept": accept})
        assert response.status == 200
        body = await response.read()
        swagger = await (await session.get(f"{emulator.url}/openapi/v2")).json()
    document = dict(_fields(body))
    assert document[1] == b"2.0"
    definitions = [dict(_fields(entry))[1] for _, entry in _fields(document[9])]
    assert definitions == [b"dev.autoscaler.v1alpha1.ScalingTarget"]
    assert definitions == [name.encode() for name in swagger["definitions"]]
    paths = {dict(_fields(entry))[1].decode() for _, entry in _fields(document[8])}
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" in paths
    assert paths == set(swagger["paths"])
    patch = swagger["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert {"in": "query", "name": "dryRun", "type": "string"} in patch["parameters"]
