"""The manifests in ``manifests/``: valid against the Kubernetes schemas, consistent with each other, with the
settings the service reads and with the image, and hardened as the issue asks.

Schemas: built-in kinds against the strict Kubernetes OpenAPI schemas of the oldest and newest supported
minors (``tests/schemas.py``, from the ``kubernetes-validate`` package); the CRD against the API server's
structural-schema rules; ScalingTargets (the examples, and every spec the project ships) against the CRD's
own schema, pruning included, and against the service's parser. RBAC is proven by running the service:
``tests/service/test_rbac_coverage.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.service.settings import environment_overrides, parse_service_settings, with_overrides
from tests.guard import REQUIRE_SERVERS
from tests.manifests import (
    EXAMPLES,
    MANIFESTS,
    NAMESPACED,
    ROOT,
    Doc,
    by_id,
    container_environment,
    default_install,
    find,
    ident,
    load_documents,
    namespaced_install,
    one,
    service_container,
    settings_text,
)
from tests.schemas import (
    KUBERNETES_VERSIONS,
    crd_version_schema,
    custom_resource_errors,
    kubernetes_errors,
    require_schemas,
    structural_errors,
)

INSTALLS = {"default": default_install, "namespaced": namespaced_install}
SERVICE_NAMESPACE = "autoscaler"


def crd() -> Doc:
    return load_documents(MANIFESTS / "crd.yaml")[0]


def target_schema() -> dict[str, Any]:
    return crd_version_schema(crd(), "v1alpha1")


# -- what gets applied ------------------------------------------------------------------------------


def test_kustomization_applies_every_manifest_once() -> None:
    listed = load_documents(MANIFESTS / "kustomization.yaml")[0]["resources"]
    files = sorted(p.name for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml")
    # controller/ holds the Deployment (and its budget) in a kustomization of its own, for sharded/ to copy.
    assert sorted(listed) == sorted([*files, "controller"]), (
        "manifests/kustomization.yaml must list every manifest in manifests/"
    )
    controller = MANIFESTS / "controller"
    assert load_documents(controller / "kustomization.yaml")[0]["resources"] == sorted(
        p.name for p in controller.glob("*.yaml") if p.name != "kustomization.yaml"
    )
    for install in INSTALLS.values():
        ids = [ident(d) for d in install()]
        assert len(ids) == len(set(ids)), "duplicate objects"
    for doc in default_install():
        if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"):
            assert doc["metadata"]["namespace"] == SERVICE_NAMESPACE, f"{doc['kind']} outside the service namespace"


@pytest.mark.parametrize("variant", INSTALLS)
def test_the_renderer_is_kustomize(variant: str) -> None:
    """tests/manifests.py renders what ``kubectl kustomize`` renders (checked when kubectl is installed)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        message = "kubectl is not installed (Debian package 'kubernetes-client'): the renderer is not compared"
        if REQUIRE_SERVERS:  # CI never skips it quietly (tests/guard.py)
            pytest.fail(message)
        pytest.skip(message)
    with tempfile.TemporaryDirectory() as scratch:
        if variant == "default":
            directory = str(MANIFESTS)
        else:  # a user's own kustomization using the component, as manifests/namespaced/kustomization.yaml says
            Path(scratch, "kustomization.yaml").write_text(
                yaml.safe_dump(
                    {
                        "resources": [os.path.relpath(MANIFESTS, scratch)],
                        "components": [os.path.relpath(NAMESPACED, scratch)],
                    }
                )
            )
            directory = scratch
        result = subprocess.run(
            [kubectl, "kustomize", directory], capture_output=True, text=True, timeout=60, check=False
        )
    assert result.returncode == 0, result.stderr
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert by_id(rendered) == by_id(INSTALLS[variant]())


# -- Kubernetes schemas -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("variant", INSTALLS)
def test_every_object_is_valid_for_kubernetes(variant: str, version: str) -> None:
    require_schemas()
    problems = [
        f"{d['kind']}/{d['metadata']['name']}: {error}"
        for d in INSTALLS[variant]()
        for error in kubernetes_errors(d, version)
    ]
    assert not problems, "\n".join(problems)


def test_the_schema_check_finds_errors() -> None:
    require_schemas()
    deployment = one(default_install(), "Deployment", "autoscaler")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["securityContext"]["readOnlyRootFS"] = True  # a typo: strict schemas refuse it
    container["resources"]["limits"]["memory"] = {"Mi": 512}
    errors = kubernetes_errors(deployment, "latest")
    assert any("readOnlyRootFS" in e for e in errors) and any("limits.memory" in e for e in errors), errors


def test_crd_schema_is_structural() -> None:
    schema = target_schema()
    assert structural_errors(schema) == []
    # The checker itself refuses what the API server refuses.
    assert structural_errors({"type": "object", "properties": {"a": {"description": "no type"}}})
    assert structural_errors({"type": "object", "properties": {"a": {"$ref": "#/x"}}})
    assert structural_errors({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}})
    assert structural_errors(
        {"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}
    )


def test_crd_printer_columns_point_into_the_schema() -> None:
    schema = target_schema()
    version = crd()["spec"]["versions"][0]
    for column in version["additionalPrinterColumns"]:
        node: Any = schema
        # a filter step (conditions[?(@.type=="ScalingActive")]) reads an item of the list; its "." are not steps
        path = re.sub(r"\[\?\(@\.(\w+)==[^)]*\)\]", r"[]", column["jsonPath"])
        for step in path.lstrip(".").split("."):
            if node.get("x-kubernetes-preserve-unknown-fields"):
                break
            part = step.removesuffix("[]")
            if part == "creationTimestamp" and node is schema["properties"]["metadata"]:
                break
            assert part in (node.get("properties") or {}), f"column {column['name']}: {column['jsonPath']}"
            node = node["properties"][part]
            if step.endswith("[]"):
                assert node.get("type") == "array", f"column {column['name']}: {part} is not a list"
                node = node["items"]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_crd_is_valid_for_kubernetes(version: str) -> None:
    require_schemas()
    assert kubernetes_errors(crd(), version) == []


# -- ScalingTargets ---------------------------------------------------------------------------------

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_example_targets_fit_the_crd_and_the_service(path: Path) -> None:
    documents = load_documents(path)
    assert documents and all(d["kind"] == "ScalingTarget" for d in documents)
    for doc in documents:
        assert "namespace" not in doc["metadata"], "examples are applied with -n <the workload's namespace>"
        assert custom_resource_errors(doc, target_schema()) == []
        spec = parse_target_spec(doc["spec"], "spec")  # raises SpecError listing every problem
        assert spec.hvpa is None or not spec.hvpa.warnings, spec.hvpa.warnings if spec.hvpa else None


def test_examples_cover_the_kinds_of_target() -> None:
    specs = [d["spec"] for p in EXAMPLE_FILES for d in load_documents(p)]
    assert {s["scaleTargetRef"]["kind"] for s in specs} == {"Deployment", "StatefulSet"}
    assert {m["type"] for s in specs for m in s.get("metrics", [])} >= {"Resource", "Pods", "External"}
    assert any("hvpa" in s for s in specs) and any(s.get("minReplicas") == 0 for s in specs)


SCENARIOS = sorted((ROOT / "config" / "scenarios").glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_crd_admits_every_shipped_spec(path: Path) -> None:
    """Each scenario's target spec, as a ScalingTarget: nothing the service accepts is refused or pruned."""
    spec = load_documents(path)[0]["spec"]
    parse_target_spec(spec, "spec", require_queries=False)  # scenarios need no PromQL (simulate reads none)
    obj = {"apiVersion": "autoscaler.dev/v1alpha1", "kind": "ScalingTarget", "metadata": {"name": "t"}, "spec": spec}
    assert custom_resource_errors(obj, target_schema()) == []


# -- the Deployment -----------------------------------------------------------------------------------


def pod_spec(docs: list[Doc]) -> dict[str, Any]:
    return dict(one(docs, "Deployment", "autoscaler")["spec"]["template"]["spec"])


def test_deployment_is_hardened() -> None:
    docs = default_install()
    deployment = one(docs, "Deployment", "autoscaler")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pod = pod_spec(docs)
    assert pod["serviceAccountName"] == one(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0 and pod["securityContext"]["runAsGroup"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = service_container(docs)
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False and security["privileged"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}, kind
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]], "a writable /tmp on the read-only root"
    assert all(m.get("readOnly") for m in container["volumeMounts"] if m["mountPath"] != "/tmp")
    assert set().union(*(v.keys() - {"name"} for v in volumes.values())) <= {"configMap", "emptyDir"}


def test_pod_meets_the_restricted_pod_security_standard() -> None:
    """The namespace enforces `restricted`; the pod passes its checks (kubernetes.io/docs/concepts/security/
    pod-security-standards)."""
    docs = default_install()
    namespace = one(docs, "Namespace", SERVICE_NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    pod = pod_spec(docs)
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(key)
    for container in pod["containers"]:
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert "ALL" in security["capabilities"]["drop"] and not security["capabilities"].get("add")
        assert security.get("runAsNonRoot", pod["securityContext"].get("runAsNonRoot")) is True
        assert (security.get("seccompProfile") or pod["securityContext"]["seccompProfile"])["type"] == "RuntimeDefault"
        assert not any("hostPort" in p for p in container.get("ports", []))


def test_probes_and_ports_match_the_settings() -> None:
    docs = default_install()
    container = service_container(docs)
    settings = parse_service_settings(yaml.safe_load(settings_text(docs)))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": settings.telemetry.http.port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    # /readyz bounds each check at 2 s: the probe must wait longer than that
    assert container["readinessProbe"]["timeoutSeconds"] > 2


def test_pod_name_reaches_the_leader_identity() -> None:
    container = service_container(default_install())
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def test_the_service_knows_the_pod_its_own_events_are_about() -> None:
    """A failing Prometheus is one Event on the service's Pod (service/backends/health.py), which the
    downward API names: without them it would go on the Lease."""
    for install in INSTALLS.values():
        env = {e["name"]: e for e in service_container(install())["env"]}
        assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
        assert env["POD_UID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.uid"}}


def test_settings_file_is_the_one_the_service_reads() -> None:
    for variant, install in INSTALLS.items():
        docs = install()
        container = service_container(docs)
        assert container["args"][:1] == ["run"], "the image's entrypoint is `autoscaler`"
        document = with_overrides(
            yaml.safe_load(settings_text(docs)), environment_overrides(container_environment(docs))
        )
        settings = parse_service_settings(document)  # SpecError lists every problem
        assert settings.serving.leader_election.enabled
        assert settings.serving.leader_election.lease_namespace is None, "the Lease lives in the pod's own namespace"
        assert settings.serving.targets_file is None and not settings.serving.dry_run
        assert settings.telemetry.logging.format == "json"
        assert re.fullmatch(r"https?://[a-z0-9.-]+\.svc(:\d+)?(/.*)?", settings.prometheus.url), (
            "an in-cluster Service address"
        )
        role = one(docs, "Role", "autoscaler-leader-election")
        assert role["metadata"]["namespace"] == one(docs, "Deployment", "autoscaler")["metadata"]["namespace"]
        named = [r for r in role["rules"] if r.get("resourceNames")]
        assert [settings.serving.leader_election.lease_name] == named[0]["resourceNames"], "Role and leaseName agree"
        expected = () if variant == "default" else ("shop", "team-a")
        assert settings.kubernetes.namespaces == expected


def test_the_repository_settings_file_matches_the_configmap() -> None:
    """config/autoscaler.yaml (baked into the image) and the ConfigMap agree on what the cluster relies on."""
    baked = parse_service_settings(yaml.safe_load((ROOT / "config" / "autoscaler.yaml").read_text()))
    mounted = parse_service_settings(yaml.safe_load(settings_text(default_install())))
    assert baked.prometheus.url == mounted.prometheus.url
    assert baked.telemetry.http == mounted.telemetry.http
    assert baked.serving.leader_election.lease_name == mounted.serving.leader_election.lease_name


def test_image_user_is_the_pods_user() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    user = re.findall(r"^USER\s+(\d+)(?::(\d+))?\s*$", dockerfile, flags=re.MULTILINE)[-1]
    pod = pod_spec(default_install())
    assert (str(pod["securityContext"]["runAsUser"]), str(pod["securityContext"]["runAsGroup"])) == user
    assert service_container(default_install())["image"] == "autoscaler:latest"


# -- Service, disruption budget ---------------------------------------------------------------------


def test_metrics_service_selects_the_pods_and_is_scraped() -> None:
    docs = default_install()
    service = one(docs, "Service", "autoscaler-metrics")
    labels = one(docs, "Deployment", "autoscaler")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    port = service["spec"]["ports"][0]
    assert port["targetPort"] == "http"
    annotations = service["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(port["port"])
    assert annotations["prometheus.io/path"] == "/metrics"
    container_port = {p["name"]: p["containerPort"] for p in service_container(docs)["ports"]}["http"]
    assert port["port"] == container_port


def test_disruption_budget_keeps_one_replica() -> None:
    docs = default_install()
    budget = one(docs, "PodDisruptionBudget", "autoscaler")
    labels = one(docs, "Deployment", "autoscaler")["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["maxUnavailable"] == 1 < one(docs, "Deployment", "autoscaler")["spec"]["replicas"]


def test_bindings_name_the_service_account() -> None:
    for install in INSTALLS.values():
        docs = install()
        account = one(docs, "ServiceAccount", "autoscaler")
        for binding in find(docs, "ClusterRoleBinding") + find(docs, "RoleBinding"):
            assert binding["subjects"] == [
                {
                    "kind": "ServiceAccount",
                    "name": account["metadata"]["name"],
                    "namespace": account["metadata"]["namespace"],
                }
            ]
            kind, name = binding["roleRef"]["kind"], binding["roleRef"]["name"]
            assert find(docs, kind, name), f"{binding['metadata']['name']} refers to a missing {kind} {name}"
        # roles for people are aggregated into admin/edit/view, never bound to the service
        bound = {b["roleRef"]["name"] for b in find(docs, "ClusterRoleBinding") + find(docs, "RoleBinding")}
        assert (
            not {
                r["metadata"]["name"]
                for r in find(docs, "ClusterRole")
                if "aggregate-to-view" in str(r["metadata"].get("labels"))
            }
            & bound
        )
