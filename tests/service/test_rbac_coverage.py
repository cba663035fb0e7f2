"""The shipped RBAC is exactly what the service needs: proven by running it, not by reading it.

The real service (``autoscaler.service.app.Service``: the Kubernetes client, watch caches, leader election,
reconcilers, Events, the Prometheus client) runs against the Kubernetes API emulator with the settings file
and environment of the shipped Deployment, through the scenario of rbac_scenario.py, which reaches every
Kubernetes call the code makes: targets valid and invalid, a 409 on a scale and its retry, a failing
metric's aggregated Event, a StatefulSet found through discovery, an HVPA target pinning its VPA, and the
Lease from creation to release.

Every request the emulator logged is mapped to what the RBAC authorizer checks (verb, API group,
resource/subresource, namespace, name) and must be allowed by the rules bound to the service account in the
rendered manifests; and every (group, resource, verb) of every bound rule must have been used by at least
one request — nothing granted that the service does not use. The same runs for the namespace-restricted
variant (``manifests/namespaced``), where no request may leave the listed namespaces.

The statuses the service wrote are also checked against the CRD's schema: a field the schema does not
specify would be silently pruned by a real API server (the emulator keeps everything).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest

from kube_emulator import KubeEmulator
from tests.guard import REQUIRE_SERVERS
from tests.manifests import (
    Doc,
    container_environment,
    default_install,
    load_documents,
    namespaced_install,
    one,
    sharded_install,
)
from tests.schemas import crd_version_schema, custom_resource_errors
from tests.service.cluster import CRD
from tests.service.rbac import Access, Authorizer
from tests.service.rbac_scenario import NAMESPACE, Run, run_scenario


def authorizer_for(manifests: list[Doc]) -> Authorizer:
    account = one(manifests, "ServiceAccount", "autoscaler")
    pod = one(manifests, "Deployment", "autoscaler")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    meta = account["metadata"]
    return Authorizer(manifests, namespace=meta["namespace"], service_account=meta["name"])


def check_coverage(run: Run) -> tuple[list[Access], set[str]]:
    """Every request allowed; every grant used. Returns the requests and the grants' descriptions."""
    authorizer = authorizer_for(run.manifests)
    accesses = [Access.of(record.info) for record in run.emulator.requests.records]
    assert accesses, "the emulator logged no request"
    denied = sorted({str(a) for a in accesses if authorizer.allowed_by(a) is None})
    assert not denied, "requests the shipped RBAC would deny (403):\n  " + "\n  ".join(denied)
    # A rule's verb counts as used when some request used it, through any of its bindings: a RoleBinding per
    # namespace grants the same rules in each, and a namespace with no targets yet uses none of them.
    used = {g.key for a in accesses for g in authorizer.allowed_by(a) or []}
    unused = sorted({str(g) for g in authorizer.grants if g.key not in used})
    assert not unused, "granted but never used by the service (remove them, or exercise them here):\n  " + "\n  ".join(
        unused
    )
    for role in authorizer.bound_roles:
        assert "aggregationRule" not in role, "a bound role aggregates others: its grants are open-ended"
    assert all("*" not in (g.group, g.resource, g.verb) for g in authorizer.grants), "no wildcards"
    return accesses, {str(g) for g in authorizer.grants}


def check_statuses_survive_the_crd_schema(emu: KubeEmulator) -> None:
    schema = crd_version_schema(load_documents(CRD)[0], "v1alpha1")
    for obj in emu.list("scalingtargets.autoscaler.dev", NAMESPACE):
        assert obj.get("status"), f"{obj['metadata']['name']}: no status written"
        errors = custom_resource_errors(obj, schema)
        assert not errors, f"ScalingTarget {obj['metadata']['name']}: " + "; ".join(errors)


async def test_default_install_rbac_is_exactly_what_the_service_uses(tmp_path: Path) -> None:
    manifests = default_install()
    run = await run_scenario(manifests, tmp_path)
    accesses, _ = check_coverage(run)
    # The scenario reached every kind of call (so that "every grant used" is not vacuous either).
    seen = {(a.verb, a.resource) for a in accesses if a.path is None}
    assert seen >= {
        ("list", "scalingtargets"),
        ("watch", "scalingtargets"),
        ("patch", "scalingtargets/status"),
        ("list", "deployments"),
        ("watch", "deployments"),
        ("list", "pods"),
        ("watch", "pods"),
        ("get", "deployments/scale"),
        ("patch", "deployments/scale"),
        ("get", "statefulsets/scale"),
        ("patch", "statefulsets/scale"),
        ("list", "verticalpodautoscalers"),
        ("watch", "verticalpodautoscalers"),
        ("patch", "verticalpodautoscalers"),
        ("list", "horizontalpodautoscalers"),
        ("watch", "horizontalpodautoscalers"),
        ("list", "scaledobjects"),
        ("watch", "scaledobjects"),
        ("create", "events"),
        ("patch", "events"),
        ("get", "leases"),
        ("create", "leases"),
        ("update", "leases"),
    }, seen
    assert any(a.path == "/apis/apps/v1" for a in accesses), "the StatefulSet was not found through discovery"
    # Cluster-wide: the caches list and watch across all namespaces.
    assert all(a.namespace is None for a in accesses if a.verb in ("list", "watch"))
    # The probes the Deployment declares answer on the running service.
    assert run.probes == {"/healthz": 200, "/readyz": 200}
    probes = one(manifests, "Deployment", "autoscaler")["spec"]["template"]["spec"]["containers"][0]
    assert {probes["livenessProbe"]["httpGet"]["path"], probes["readinessProbe"]["httpGet"]["path"]} == set(run.probes)
    check_statuses_survive_the_crd_schema(run.emulator)


async def test_namespaced_variant_stays_in_its_namespaces(tmp_path: Path) -> None:
    manifests = namespaced_install()
    assert not [d for d in manifests if d["kind"] == "ClusterRoleBinding"]
    watched = set(container_environment(manifests)["AUTOSCALER_NAMESPACES"].split(","))
    assert NAMESPACE in watched
    bound = {
        d["metadata"]["namespace"]
        for d in manifests
        if d["kind"] == "RoleBinding"
        and d["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "autoscaler"}
    }
    assert bound == watched, "one RoleBinding of the ClusterRole per watched namespace"
    run = await run_scenario(manifests, tmp_path)
    accesses, _ = check_coverage(run)
    lease_namespace = run.lease[0]
    outside = sorted(
        {
            str(a)
            for a in accesses
            if a.path is None
            and a.namespace not in watched
            and not (a.resource == "leases" and a.namespace == lease_namespace)
        }
    )
    assert not outside, "requests outside the watched namespaces:\n  " + "\n  ".join(outside)


async def test_sharded_variant_rbac_covers_a_shards_instance(tmp_path: Path) -> None:
    """A shard's instance (manifests/sharded, Deployment autoscaler-shard-a: ``--shard a``) makes the same
    requests as the default install's, its targets' LIST and WATCH selected by the shard's label, and
    elects its leader with the Lease autoscaler-a: all allowed, every grant of the one service account still
    used. The other shards' instances differ from it only in the name (tests/test_manifests.py)."""
    try:
        manifests = sharded_install()
    except FileNotFoundError as missing:
        if REQUIRE_SERVERS:
            pytest.fail(f"{missing}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping")
        pytest.skip(str(missing))
    run = await run_scenario(manifests, tmp_path, "autoscaler-shard-a", labels={"autoscaler.dev/shard": "a"})
    accesses, _ = check_coverage(run)
    assert run.lease == ("autoscaler", "autoscaler-a")
    assert Access("update", "coordination.k8s.io", "leases", "autoscaler", "autoscaler-a") in accesses
    targets = [
        r for r in run.emulator.requests.records if r.resource == "scalingtargets" and r.verb in ("list", "watch")
    ]
    assert targets and all(parse_qs(r.query)["labelSelector"] == ["autoscaler.dev/shard=a"] for r in targets), [
        r.query for r in targets
    ]
    check_statuses_survive_the_crd_schema(run.emulator)
    assert all(
        obj["status"].get("shard") == "a" for obj in run.emulator.list("scalingtargets.autoscaler.dev", NAMESPACE)
    ), "status.shard names the shard"


def test_the_authorizer_matches_kubernetes_rules() -> None:
    """The evaluator itself: namespaces, subresources, resourceNames, and discovery."""
    manifests = default_install()
    authorizer = authorizer_for(manifests)
    allowed = authorizer.allowed_by
    assert allowed(Access("patch", "apps", "deployments/scale", "shop", "web"))
    assert not allowed(Access("patch", "apps", "deployments", "shop", "web"))  # the object itself: no
    assert not allowed(Access("get", "apps", "deployments", "shop", "web"))  # read from the cache only
    assert not allowed(Access("patch", "apps", "replicasets/scale", "shop", "web"))  # not granted by default
    assert not allowed(Access("update", "autoscaler.dev", "scalingtargets", "shop", "web"))
    assert allowed(Access("get", "coordination.k8s.io", "leases", "autoscaler", "autoscaler"))
    assert not allowed(Access("get", "coordination.k8s.io", "leases", "autoscaler", "other"))  # resourceNames
    assert not allowed(Access("get", "coordination.k8s.io", "leases", "shop", "autoscaler"))  # other namespace
    assert allowed(Access("create", "coordination.k8s.io", "leases", "autoscaler"))
    assert allowed(Access("get", path="/apis/apps/v1")) == []  # system:discovery
    assert allowed(Access("get", path="/metrics")) is None
    namespaced = authorizer_for(namespaced_install())
    assert namespaced.allowed_by(Access("list", "", "pods", "shop"))
    assert not namespaced.allowed_by(Access("list", "", "pods", None))  # cluster-wide list: no
    assert not namespaced.allowed_by(Access("list", "", "pods", "kube-system"))


def test_rbac_rules_are_documented() -> None:
    """docs/operations.md lists the same grants as rbac.yaml (a table row per rule)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("## RBAC", 1)[1].split("\n## ", 1)[0]
    for doc in default_install():
        if doc["kind"] not in ("ClusterRole", "Role") or doc["metadata"]["name"].startswith("autoscaler-targets"):
            continue
        for rule in doc["rules"]:
            for resource in rule["resources"]:
                row = next(
                    (
                        line
                        for line in section.splitlines()
                        if line.startswith("|")
                        and f"`{resource}`" in line
                        and all(f"`{verb}`" in line for verb in rule["verbs"])
                    ),
                    None,
                )
                assert row is not None, f"docs/operations.md RBAC table: no row for {resource} {rule['verbs']}"
