"""A custom resource's structural schema on every write, through the real kubernetes-asyncio client: pruning
(and ``x-kubernetes-preserve-unknown-fields``), ``fieldValidation``, defaults, and the API server's 422 for
types, enums, required fields and bounds, on create, update and patch. The expected messages are the API
server's (kube-openapi's wording, ``field.Error`` formatting)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator, structural

WIDGETS = ("example.dev", "v1", "default", "widgets")
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.dev"},
    "spec": {
        "group": "example.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                    "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Slow"},
                                    "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                                    "name": {"type": "string", "maxLength": 5},
                                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "items": {
                                        "type": "array",
                                        "items": {"type": "object", "properties": {"id": {"type": "string"}}},
                                    },
                                    "quantity": {
                                        "x-kubernetes-int-or-string": True,
                                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                                    },
                                },
                            },
                            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                        },
                    }
                },
            }
        ],
    },
}


def widget(spec: dict[str, Any], name: str = "w") -> dict[str, Any]:
    return {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def problem(caught: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    return dict(json.loads(caught.value.body))


@pytest.fixture
async def widgets(emulator: KubeEmulator, api: ApiClient) -> client.CustomObjectsApi:
    emulator.install_crd(CRD)
    return client.CustomObjectsApi(api)


async def test_unknown_fields_are_pruned_but_kept_where_the_schema_preserves_them(
    widgets: client.CustomObjectsApi,
) -> None:
    created = await widgets.create_namespaced_custom_object(
        *WIDGETS,
        widget({"size": 2, "colour": "red", "extra": {"anything": {"deep": 1}}, "items": [{"id": "a", "junk": True}]})
        | {"top": 1},
    )
    assert created["spec"] == {
        "size": 2,
        "mode": "Slow",
        "extra": {"anything": {"deep": 1}},
        "items": [{"id": "a"}],
    }  # pruned, preserved, defaulted
    assert "top" not in created


async def test_warn_is_the_default_and_says_what_was_dropped(
    emulator: KubeEmulator, widgets: client.CustomObjectsApi
) -> None:
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            f"{emulator.url}/apis/example.dev/v1/namespaces/default/widgets", json=widget({"size": 1, "colour": "red"})
        )
        assert response.status == 201
        assert response.headers.getall("Warning") == ['299 - "unknown field \\"spec.colour\\""']


async def test_strict_field_validation_refuses_an_unknown_field(widgets: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as caught:
        await widgets.create_namespaced_custom_object(
            *WIDGETS, widget({"size": 1, "colour": "red"}), field_validation="Strict"
        )
    assert caught.value.status == 400
    assert problem(caught)["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.colour"'
    )


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"size": "abc"}, "spec.size", 'Invalid value: "string": spec.size in body must be of type integer: "string"'),
        ({"size": 1.5}, "spec.size", 'Invalid value: "number": spec.size in body must be of type integer: "number"'),
        ({"size": 11}, "spec.size", "Invalid value: 11: spec.size in body should be less than or equal to 10"),
        ({"size": 0}, "spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        ({"size": 1, "ratio": 0}, "spec.ratio", "Invalid value: 0: spec.ratio in body should be greater than 0"),
        ({"size": 1, "mode": "Quick"}, "spec.mode", 'Unsupported value: "Quick": supported values: "Fast", "Slow"'),
        ({}, "spec.size", "Required value"),
        ({"size": 1, "name": "toolong"}, "spec.name", "Too long: may not be longer than 5"),
        (
            {"size": 1, "quantity": True},
            "spec.quantity",
            'Invalid value: "boolean": spec.quantity in body must be of type integer,string: "boolean"',
        ),
    ],
)
async def test_a_broken_constraint_is_the_api_servers_422(
    widgets: client.CustomObjectsApi, spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiException) as caught:
        await widgets.create_namespaced_custom_object(*WIDGETS, widget(spec))
    body = problem(caught)
    assert caught.value.status == 422 and body["reason"] == "Invalid"
    causes = {(cause["field"], cause["message"]) for cause in body["details"]["causes"]}
    assert (field, message) in causes
    if len(body["details"]["causes"]) == 1:
        assert body["message"] == f'Widget.example.dev "w" is invalid: {field}: {message}'


async def test_several_problems_are_listed_together(widgets: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as caught:
        await widgets.create_namespaced_custom_object(*WIDGETS, widget({"size": 20, "mode": "Quick"}))
    assert problem(caught)["message"] == (
        'Widget.example.dev "w" is invalid: [spec.mode: Unsupported value: "Quick": supported values: "Fast", '
        '"Slow", spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10]'
    )


async def test_updates_patches_and_status_writes_are_held_to_the_schema(widgets: client.CustomObjectsApi) -> None:
    created = await widgets.create_namespaced_custom_object(*WIDGETS, widget({"size": 2}))
    with pytest.raises(ApiException) as caught:
        await widgets.replace_namespaced_custom_object(*WIDGETS, "w", {**created, "spec": {"size": -1}})
    assert caught.value.status == 422
    with pytest.raises(ApiException) as caught:
        await widgets.patch_namespaced_custom_object(
            *WIDGETS, "w", {"spec": {"size": "x"}}, _content_type="application/merge-patch+json"
        )
    assert caught.value.status == 422
    with pytest.raises(ApiException) as caught:
        await widgets.patch_namespaced_custom_object_status(
            *WIDGETS, "w", {"status": {"ready": "yes"}}, _content_type="application/merge-patch+json"
        )
    assert 'status.ready in body must be of type boolean: "string"' in problem(caught)["message"]
    patched = await widgets.patch_namespaced_custom_object(
        *WIDGETS, "w", {"spec": {"size": 3, "colour": "x"}}, _content_type="application/merge-patch+json"
    )
    assert patched["spec"] == {"size": 3, "mode": "Slow"}


async def test_a_status_write_is_held_to_the_schema_of_its_status_alone(
    emulator: KubeEmulator, widgets: client.CustomObjectsApi
) -> None:
    """A stored spec that breaks the schema (seeded, or stored before the schema tightened) is tolerated by a
    status write, as every problem the stored object had is; the status it writes is still checked, and
    the spec is again the moment a write changes it."""
    emulator.seed({**widget({"size": 99}), "metadata": {"name": "w", "namespace": "default"}})
    written = await widgets.patch_namespaced_custom_object_status(
        *WIDGETS, "w", {"status": {"ready": True}}, _content_type="application/merge-patch+json"
    )
    assert written["status"] == {"ready": True} and written["spec"]["size"] == 99
    with pytest.raises(ApiException) as caught:
        await widgets.patch_namespaced_custom_object_status(
            *WIDGETS, "w", {"status": {"ready": "yes"}}, _content_type="application/merge-patch+json"
        )
    assert [c["field"] for c in problem(caught)["details"]["causes"]] == ["status.ready"]
    with pytest.raises(ApiException) as caught:
        await widgets.patch_namespaced_custom_object(
            *WIDGETS, "w", {"spec": {"size": 98}}, _content_type="application/merge-patch+json"
        )
    assert [c["field"] for c in problem(caught)["details"]["causes"]] == ["spec.size"]


def test_fields_an_update_left_unchanged_are_not_walked() -> None:
    schema = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    obj = {**widget({"size": 99}), "status": {"ready": "yes"}}
    assert [e.field for e in structural.validate(obj, schema)] == ["spec.size", "status.ready"]
    assert [e.field for e in structural.validate(obj, schema, unchanged=frozenset({"spec"}))] == ["status.ready"]
    assert structural.validate(obj, schema, unchanged=frozenset({"spec", "status"})) == []


async def test_a_whole_float_is_an_integer_and_is_stored_as_one(widgets: client.CustomObjectsApi) -> None:
    """The real server decodes ``2.0`` into a float64, takes it for ``type: integer`` (kube-openapi: a
    whole float up to 2^53) and stores float64(2) as ``2``; a number field's ``3.0`` comes back ``3`` too."""
    created = await widgets.create_namespaced_custom_object(*WIDGETS, widget({"size": 2.0, "ratio": 3.0}))
    assert created["spec"]["size"] == 2 and type(created["spec"]["size"]) is int
    assert created["spec"]["ratio"] == 3 and type(created["spec"]["ratio"]) is int
    patched = await widgets.patch_namespaced_custom_object(
        *WIDGETS, "w", {"spec": {"size": 4.0, "ratio": 0.5}}, _content_type="application/merge-patch+json"
    )
    assert (patched["spec"]["size"], patched["spec"]["ratio"]) == (4, 0.5) and type(patched["spec"]["size"]) is int


def test_whole_floats_become_integers_up_to_two_to_the_53() -> None:
    value = {"a": [1.0, 2.5, {"b": -3.0}], "c": float(2**53), "d": float(2**53 + 2), "e": float("nan"), "f": True}
    converted = structural.go_numbers(value)
    assert converted["a"][0] == 1 and type(converted["a"][0]) is int
    assert converted["a"][1] == 2.5 and type(converted["a"][2]["b"]) is int
    assert type(converted["c"]) is int and type(converted["d"]) is float  # past 2^53: not a JSON integer
    assert type(converted["e"]) is float and converted["f"] is True
