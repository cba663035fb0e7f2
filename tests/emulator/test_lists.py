"""Lists of built-in kinds through the real kubernetes-asyncio client: label and field selectors, and pages
(``limit`` and ``continue``) in namespace/name order that see objects created and deleted between them.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, ApiException

from kube_emulator import KubeEmulator

from .builders import pod


async def test_label_and_field_selectors(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(
        pod("a", labels={"app": "web", "tier": "front"}, phase="Running"),
        pod("b", labels={"app": "web", "tier": "back"}, phase="Pending"),
        pod("c", labels={"app": "db"}, phase="Running"),
        pod("d", namespace="other", labels={"app": "web"}, phase="Running"),
    )
    core = client.CoreV1Api(api)

    async def names(namespace: str | None = "default", **selectors: str) -> list[str]:
        if namespace is None:
            result = await core.list_pod_for_all_namespaces(**selectors)
        else:
            result = await core.list_namespaced_pod(namespace, **selectors)
        return [item.metadata.name for item in result.items]

    assert await names(label_selector="app=web") == ["a", "b"]
    assert await names(label_selector="app==web,tier!=front") == ["b"]
    assert await names(label_selector="app in (web,db),tier notin (back)") == ["a", "c"]
    assert await names(label_selector="tier") == ["a", "b"]
    assert await names(label_selector="!tier") == ["c"]
    assert await names(None, label_selector="app=web") == ["a", "b", "d"]
    assert await names(field_selector="status.phase=Running") == ["a", "c"]
    assert await names(field_selector="metadata.name=b") == ["b"]
    assert await names(None, field_selector="metadata.namespace=other") == ["d"]
    assert await names(label_selector="app=web", field_selector="status.phase!=Pending") == ["a"]
    for bad in ({"label_selector": "app in ("}, {"field_selector": "spec.unknownField=x"}):
        with pytest.raises(ApiException) as rejected:
            await names(**bad)
        assert rejected.value.status == 400


async def test_pagination_with_limit_and_continue(emulator: KubeEmulator, api: ApiClient) -> None:
    emulator.seed(*(pod(f"p{i:02}") for i in range(7)))
    core = client.CoreV1Api(api)
    seen: list[str] = []
    token = None
    while True:
        page = await core.list_namespaced_pod("default", limit=3, _continue=token)
        seen += [item.metadata.name for item in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count is not None
    assert seen == [f"p{i:02}" for i in range(7)]


async def test_cluster_wide_pages_come_in_namespace_name_order_and_see_new_and_deleted_pods(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    for namespace in ("b", "a"):
        await client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    emulator.seed(
        *({**pod(f"p{i}"), "metadata": {"name": f"p{i}", "namespace": ns}} for ns in ("b", "a") for i in (3, 1, 2))
    )
    core = client.CoreV1Api(api)

    async def everything() -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        token = None
        while True:
            page = await core.list_pod_for_all_namespaces(limit=2, _continue=token)
            seen += [(item.metadata.namespace, item.metadata.name) for item in page.items]
            token = page.metadata._continue
            if not token:
                return seen

    assert await everything() == [(ns, f"p{i}") for ns in ("a", "b") for i in (1, 2, 3)]
    await core.create_namespaced_pod("a", {**pod("p0"), "metadata": {"name": "p0", "namespace": "a"}})
    assert (await everything())[:2] == [("a", "p0"), ("a", "p1")]
    await core.delete_namespaced_pod("p2", "b", grace_period_seconds=0)
    assert await everything() == [("a", "p0"), ("a", "p1"), ("a", "p2"), ("a", "p3"), ("b", "p1"), ("b", "p3")]


async def test_cluster_wide_pages_count_what_remains_and_end_on_the_last_object(
    emulator: KubeEmulator, api: ApiClient
) -> None:
    emulator.seed(*(pod(f"p{i}") for i in range(5)))
    core = client.CoreV1Api(api)
    first = await core.list_pod_for_all_namespaces(limit=2)
    assert [p.metadata.name for p in first.items] == ["p0", "p1"] and first.metadata.remaining_item_count == 3
    second = await core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in second.items] == ["p2", "p3"] and second.metadata.remaining_item_count == 1
    last = await core.list_pod_for_all_namespaces(limit=2, _continue=second.metadata._continue)
    assert [p.metadata.name for p in last.items] == ["p4"] and not last.metadata._continue
    for limit in (5, 6):  # a page that holds everything left has no continue token
        whole = await core.list_pod_for_all_namespaces(limit=limit)
        assert len(whole.items) == 5 and not whole.metadata._continue and whole.metadata.remaining_item_count is None
