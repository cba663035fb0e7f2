"""The sharded install (``manifests/sharded``, docs/sharding.md): the default install plus a Deployment per
shard, rendered by the real ``kubectl kustomize`` (its patches pick their targets by label, which the
renderer of tests/manifests.py leaves out). Each shard runs ``--shard <name>`` with a Lease of its own that
the RBAC grants, no two Deployments or budgets select the same pods, and a shard's Deployment is the
default one but for its instance. A shard's instance running through the RBAC scenario is
tests/service/test_rbac_coverage.py's.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from autoscaler.cli import build_parser
from autoscaler.cli.run import flag_overrides
from autoscaler.service.settings import ServiceSettings, environment_overrides, parse_service_settings, with_overrides
from tests.guard import REQUIRE_SERVERS
from tests.manifests import (
    Doc,
    by_id,
    default_install,
    find,
    ident,
    normalized,
    one,
    service_container,
    settings_text,
    sharded_install,
)
from tests.schemas import KUBERNETES_VERSIONS, kubernetes_errors, require_schemas

SHARDS = {"autoscaler": None, "autoscaler-shard-a": "a", "autoscaler-shard-b": "b"}


def rendered_sharded_install() -> list[Doc]:
    """``kubectl kustomize`` of the default install with manifests/sharded: the real renderer, never skipped
    in CI (the component's patches select by label, which tests/manifests.py does not implement)."""
    try:
        return sharded_install()
    except FileNotFoundError as missing:
        if REQUIRE_SERVERS:
            pytest.fail(f"{missing}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping")
        pytest.skip(str(missing))


def instance_settings(docs: list[Doc], name: str) -> ServiceSettings:
    """The settings the Deployment ``name``'s container runs with: the mounted file, its environment, and
    its command line read by the real ``autoscaler run`` parser."""
    container = service_container(docs, name)
    args = build_parser().parse_args(container["args"])
    environment = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
    document = with_overrides(
        with_overrides(yaml.safe_load(settings_text(docs)), environment_overrides(environment)), flag_overrides(args)
    )
    return parse_service_settings(document)


def test_sharded_install_runs_each_shard_with_its_own_lease() -> None:
    docs = rendered_sharded_install()
    deployments = {d["metadata"]["name"]: d for d in find(docs, "Deployment")}
    assert set(deployments) == set(SHARDS), "the unsharded instance and one Deployment per shard"
    leases = {}
    for name, shard in SHARDS.items():
        settings = instance_settings(docs, name)
        assert settings.serving.sharding.shard == shard, f"{name} runs --shard {shard}"
        assert settings.serving.leader_election.enabled and deployments[name]["spec"]["replicas"] == 2, (
            "a leader, a standby"
        )
        leases[name] = settings.serving.sharding.lease_name(settings.serving.leader_election.lease_name)
        args = service_container(docs, name)["args"]
        assert (args[args.index("--shard") + 1] if "--shard" in args else None) == shard
    assert leases == {
        "autoscaler": "autoscaler",
        "autoscaler-shard-a": "autoscaler-a",
        "autoscaler-shard-b": "autoscaler-b",
    }
    # RBAC still covers every instance: the one service account, and every shard's Lease by name.
    role = one(docs, "Role", "autoscaler-leader-election")
    named = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert sorted(named[0]["resourceNames"]) == sorted(leases.values())
    account = one(docs, "ServiceAccount", "autoscaler")["metadata"]["name"]
    assert {d["spec"]["template"]["spec"]["serviceAccountName"] for d in deployments.values()} == {account}
    assert by_id(find(docs, "ClusterRole") + find(docs, "ClusterRoleBinding")) == by_id(
        find(default_install(), "ClusterRole") + find(default_install(), "ClusterRoleBinding")
    )


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}, selector
    return bool(selector["matchLabels"].items() <= labels.items())


def test_sharded_instances_select_their_own_pods_only() -> None:
    """Overlapping selectors make controllers fight over pods, and a pod under two disruption budgets cannot
    be evicted: every Deployment and budget selects exactly one instance's pods; the Service all of them."""
    docs = rendered_sharded_install()
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in find(docs, "Deployment")}
    for deployment in find(docs, "Deployment"):
        chosen = [name for name, labels in pods.items() if _selects(deployment["spec"]["selector"], labels)]
        assert chosen == [deployment["metadata"]["name"]], f"{deployment['metadata']['name']} selects {chosen}"
        spread = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
        term = spread["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
        assert [n for n, labels in pods.items() if _selects(term["labelSelector"], labels)] == chosen
    budgets = find(docs, "PodDisruptionBudget")
    assert len(budgets) == len(pods)
    for budget in budgets:
        chosen = [name for name, labels in pods.items() if _selects(budget["spec"]["selector"], labels)]
        assert chosen == [budget["metadata"]["name"]], f"budget {budget['metadata']['name']} covers {chosen}"
    service = one(docs, "Service", "autoscaler-metrics")
    assert all(service["spec"]["selector"].items() <= labels.items() for labels in pods.values()), "all scraped"


def test_sharded_deployments_differ_from_the_default_one_only_in_their_instance() -> None:
    """A shard's Deployment is the default install's, renamed, relabelled and with --shard: no drift."""
    docs = rendered_sharded_install()
    base = one(default_install(), "Deployment", "autoscaler")
    for name, shard in SHARDS.items():
        deployment = copy.deepcopy(one(docs, "Deployment", name))
        instance = deployment["metadata"]["labels"].pop("app.kubernetes.io/instance")
        assert instance == name
        deployment["metadata"]["name"] = "autoscaler"
        deployment["spec"]["selector"]["matchLabels"].pop("app.kubernetes.io/instance")
        template = deployment["spec"]["template"]
        template["metadata"]["labels"].pop("app.kubernetes.io/instance")
        spread = template["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        spread[0]["podAffinityTerm"]["labelSelector"]["matchLabels"].pop("app.kubernetes.io/instance")
        container = template["spec"]["containers"][0]
        if shard is not None:
            assert container["args"][-2:] == ["--shard", shard]
            container["args"] = container["args"][:-2]
        assert normalized(deployment) == normalized(base), name


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_sharded_install_is_valid_for_kubernetes(version: str) -> None:
    require_schemas()
    docs = rendered_sharded_install()
    ids = [ident(d) for d in docs]
    assert len(ids) == len(set(ids)), "duplicate objects"
    problems = [f"{d['kind']}/{d['metadata']['name']}: {e}" for d in docs for e in kubernetes_errors(d, version)]
    assert not problems, "\n".join(problems)
