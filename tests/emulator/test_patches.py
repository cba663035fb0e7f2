"""Merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch, without HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from kube_emulator.patches import PatchError, apply_json_patch, apply_merge_patch
from kube_emulator.strategic_merge import apply_strategic_merge_patch, schema_for


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # The examples of RFC 7386, appendix A.
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc_examples(target: Any, patch: Any, result: Any) -> None:
    assert apply_merge_patch(target, patch) == result


def test_merge_patch_leaves_the_target_alone() -> None:
    target = {"spec": {"replicas": 1, "x": {"y": 1}}}
    apply_merge_patch(target, {"spec": {"replicas": 3, "x": {"y": None}}})
    assert target == {"spec": {"replicas": 1, "x": {"y": 1}}}


DOC = {"foo": ["bar", "baz"], "obj": {"a/b": 1, "m~n": 2}, "n": 1}


@pytest.mark.parametrize(
    ("operations", "result"),
    [
        ([{"op": "add", "path": "/foo/1", "value": "qux"}], {**DOC, "foo": ["bar", "qux", "baz"]}),
        ([{"op": "add", "path": "/foo/-", "value": "end"}], {**DOC, "foo": ["bar", "baz", "end"]}),
        ([{"op": "remove", "path": "/obj/a~1b"}], {**DOC, "obj": {"m~n": 2}}),
        ([{"op": "replace", "path": "/obj/m~0n", "value": 3}], {**DOC, "obj": {"a/b": 1, "m~n": 3}}),
        ([{"op": "move", "from": "/n", "path": "/m"}], {"foo": ["bar", "baz"], "obj": DOC["obj"], "m": 1}),
        ([{"op": "copy", "from": "/foo/0", "path": "/first"}], {**DOC, "first": "bar"}),
        (
            [{"op": "test", "path": "/n", "value": 1}, {"op": "replace", "path": "/n", "value": 2}],
            {**DOC, "n": 2},
        ),
        ([{"op": "replace", "path": "", "value": {"x": 1}}], {"x": 1}),
    ],
)
def test_json_patch(operations: list[Any], result: Any) -> None:
    assert apply_json_patch(DOC, operations) == result


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "test", "path": "/n", "value": 2}],
        [{"op": "test", "path": "/n", "value": True}],  # JSON true is not 1
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/no/such/parent", "value": 1}],
        [{"op": "add", "path": "/foo/5", "value": 1}],
        [{"op": "move", "from": "/obj", "path": "/obj/inside"}],
        [{"op": "frobnicate", "path": "/n"}],
        [{"op": "add", "path": "/x"}],
    ],
)
def test_json_patch_failures(operations: list[Any]) -> None:
    with pytest.raises(PatchError):
        apply_json_patch(DOC, operations)


def test_json_patch_is_all_or_nothing() -> None:
    document = {"n": 1}
    with pytest.raises(PatchError):
        apply_json_patch(
            document, [{"op": "replace", "path": "/n", "value": 2}, {"op": "test", "path": "/n", "value": 1}]
        )
    assert document == {"n": 1}


DEPLOYMENT = {
    "metadata": {"name": "web", "finalizers": ["a"]},
    "spec": {
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "v1",
                        "env": [{"name": "A", "value": "1"}],
                        "resources": {"requests": {"cpu": "1"}},
                    },
                    {"name": "sidecar", "image": "s1"},
                ],
                "tolerations": [{"key": "x"}],
            }
        },
    },
}


def smp(patch: Any) -> Any:
    return apply_strategic_merge_patch(DEPLOYMENT, patch, schema_for("apps/deployments"))


def test_strategic_merge_merges_containers_by_name() -> None:
    result = smp(
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "2"}}}]}}}}
    )
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "sidecar"]
    assert containers[0] == {
        "name": "app",
        "image": "v1",
        "env": [{"name": "A", "value": "1"}],
        "resources": {"requests": {"cpu": "2"}},
    }


def test_strategic_merge_appends_new_elements_and_merges_nested_keyed_lists() -> None:
    result = smp(
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "app", "env": [{"name": "B", "value": "2"}]},
                            {"name": "new", "image": "n"},
                        ]
                    }
                }
            }
        }
    )
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "sidecar", "new"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]


def test_strategic_merge_directives() -> None:
    deleted = smp({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}})
    assert [c["name"] for c in deleted["spec"]["template"]["spec"]["containers"]] == ["app"]
    replaced = smp(
        {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "o"}, {"$patch": "replace"}]}}}}
    )
    assert replaced["spec"]["template"]["spec"]["containers"] == [{"name": "only", "image": "o"}]
    # Lists without a merge key (tolerations) are replaced whole, as in the real server.
    tolerated = smp({"spec": {"template": {"spec": {"tolerations": [{"key": "y"}]}}}})
    assert tolerated["spec"]["template"]["spec"]["tolerations"] == [{"key": "y"}]
    # Finalizers merge as a set and can be removed with $deleteFromPrimitiveList.
    assert smp({"metadata": {"finalizers": ["b", "a"]}})["metadata"]["finalizers"] == ["a", "b"]
    assert smp({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})["metadata"]["finalizers"] == []
    retained = smp({"spec": {"$retainKeys": ["replicas"], "replicas": 4}})
    assert retained["spec"] == {"replicas": 4}
    assert smp({"spec": {"template": {"$patch": "delete"}}})["spec"] == {"replicas": 1}


def test_strategic_merge_requires_the_merge_key() -> None:
    with pytest.raises(PatchError, match="merge key"):
        smp({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}})
