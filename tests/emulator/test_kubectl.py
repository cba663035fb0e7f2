"""The emulator as a person drives it: the real ``kubectl`` binary, with its default validation, against it.

Every expectation here is what kubectl prints against a real API server (its own tables, messages and exit
codes), so these tests judge the emulator by the client, not by the emulator's code.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from kube_emulator import KubeEmulator
from tests.manifests import EXAMPLES, MANIFESTS, build, ident

from .builders import deployment
from .kubectl import Kubectl, table

pytestmark = pytest.mark.kubectl

INVALID_TARGET = """
apiVersion: autoscaler.dev/v1alpha1
kind: ScalingTarget
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: abc
  maxReplicas: 5
"""


async def test_apply_k_installs_every_manifest_with_validation_on(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    applied = await kubectl("apply", "-k", str(MANIFESTS))
    expected = build(MANIFESTS)
    assert len(applied.out.splitlines()) == len(expected)
    assert "created" in applied.out and applied.err == ""
    for document in expected:
        group, kind, namespace, name = ident(document)
        resource = emulator.registry.for_object(str(document["apiVersion"]), kind)
        assert (
            emulator.get(f"{resource.plural}.{group}" if group else resource.plural, name, namespace or None)
            is not None
        ), (kind, name)
    again = await kubectl("apply", "-k", str(MANIFESTS))
    assert "unchanged" in again.out and "created" not in again.out


async def test_apply_f_examples_and_get_st_shows_the_printer_columns(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    applied = await kubectl("apply", "-f", str(EXAMPLES))
    assert applied.out.count("created") == len(list(EXAMPLES.glob("*.yaml")))
    emulator.patch(
        "st", "web", {"status": {"currentReplicas": 3, "desiredReplicas": 4, "shard": "a"}}, subresource="status"
    )

    rows = table((await kubectl("get", "st")).out)
    assert rows[0] == ["NAME", "TARGET", "MIN", "MAX", "CURRENT", "DESIRED", "PAUSED", "ACTIVE", "REASON", "AGE"]
    web = next(row for row in rows if row[0] == "web")
    assert web[1:6] == ["web", "2", "20", "3", "4"]
    assert web[6].endswith("s")  # an age such as "2s", not a timestamp (PAUSED, ACTIVE, REASON: no cells yet)
    wide = table((await kubectl("get", "st", "-o", "wide")).out)
    assert wide[0] == [
        "NAME",
        "TARGET",
        "KIND",
        "MIN",
        "MAX",
        "CURRENT",
        "DESIRED",
        "LIMITED",
        "SHARD",
        "PAUSED",
        "ACTIVE",
        "REASON",
        "AGE",
    ]
    assert next(row for row in wide if row[0] == "web")[-2] == "a"  # SHARD (LIMITED is empty: no cell here)


async def test_get_prints_the_usual_columns_of_built_in_kinds(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    emulator.seed(
        deployment() | {"status": {"replicas": 2, "readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}}
    )
    headers = {
        "deployments": ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "namespaces": ["NAME", "STATUS", "AGE"],
        "leases": ["NAME", "HOLDER", "AGE"],
    }
    for resource, header in headers.items():
        emulator.seed(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "autoscaler", "namespace": "default"},
                "spec": {"holderIdentity": "pod-a"},
            }
        )
        rows = table((await kubectl("get", resource)).out)
        assert rows[0] == header, resource
    assert table((await kubectl("get", "deployments")).out)[1][:4] == ["web", "1/2", "2", "1"]
    assert table((await kubectl("get", "leases")).out)[1][:2] == ["autoscaler", "pod-a"]
    emulator.seed(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": True, "restartCount": 2}]},
        }
    )
    pods = table((await kubectl("get", "pods")).out)
    assert pods[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert pods[1][:4] == ["web-1", "1/1", "Running", "2"]
    emulator.seed(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Deployment", "name": "web"},
            "reason": "Scaled",
            "type": "Normal",
            "message": "scaled to 3",
            "count": 1,
        }
    )
    events = table((await kubectl("get", "events")).out)
    assert events[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert events[1][1:] == ["Normal", "Scaled", "deployment/web", "scaled to 3"]


async def test_explain_st_renders_the_crd_schema(kubectl: Kubectl) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    explained = (await kubectl("explain", "st")).out  # kubectl ≥ 1.27 reads OpenAPI v3, older ones v2
    assert re.search(r"KIND:\s+ScalingTarget", explained) and "v1alpha1" in explained
    assert re.search(r"spec\t<Object> -required-\n\s+What to scale and on which metrics", explained)
    field = (await kubectl("explain", "st.spec.maxReplicas")).out
    assert re.search(r"FIELD:\s+maxReplicas <integer>", field)


async def test_delete_dry_run_server_leaves_the_object(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    await kubectl("apply", "-f", str(EXAMPLES / "web-cpu-and-rps.yaml"))
    emulator.seed(deployment("dd"))
    emulator.seed(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        }
    )
    for kind, name in (("deploy", "dd"), ("st", "web"), ("pod", "p")):
        deleted = await kubectl("delete", kind, name, "--dry-run=server")
        assert "(server dry run)" in deleted.out
        assert emulator.get(kind, name) is not None, kind
    await kubectl("delete", "deploy", "dd")
    assert emulator.get("deploy", "dd") is None


async def test_an_invalid_target_is_rejected_with_the_api_servers_message(kubectl: Kubectl) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    # Without client-side validation (kubectl before 1.27 validates on its side first), the server's word:
    rejected = await kubectl("apply", "--validate=false", "-f", "-", stdin=INVALID_TARGET, check=False)
    assert rejected.code == 1
    # a type error leaves the CRD's CEL rules unchecked, and the server says so (as a real one does)
    assert rejected.err.strip() == (
        'The ScalingTarget "bad" is invalid: \n'
        '* spec.minReplicas: Invalid value: "string": spec.minReplicas in body must be of type integer: "string"\n'
        '* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation"
    )
    unknown = await kubectl("apply", "-f", "-", stdin=INVALID_TARGET.replace("maxReplicas", "maxReplicaz"), check=False)
    assert unknown.code == 1
    # kubectl ≥ 1.27 leaves it to the server (fieldValidation=Strict); older ones refuse it from OpenAPI v2.
    assert (
        'strict decoding error: unknown field "spec.maxReplicaz"' in unknown.err
        or 'unknown field "maxReplicaz"' in unknown.err
    ), unknown.err


async def test_get_watch_prints_a_row_per_change(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    await kubectl("apply", "-f", str(EXAMPLES / "web-cpu-and-rps.yaml"))
    watcher = await kubectl.start("get", "st", "-w")
    assert watcher.stdout is not None
    try:
        header = await asyncio.wait_for(watcher.stdout.readline(), 30)
        first = await asyncio.wait_for(watcher.stdout.readline(), 30)
        assert header.split()[:4] == [b"NAME", b"TARGET", b"MIN", b"MAX"]
        assert first.split()[:4] == [b"web", b"web", b"2", b"20"]
        emulator.patch("st", "web", {"spec": {"maxReplicas": 30}})
        changed = await asyncio.wait_for(watcher.stdout.readline(), 30)
        assert changed.split()[:4] == [b"web", b"web", b"2", b"30"]
    finally:
        watcher.terminate()
        await watcher.wait()


async def test_create_sends_protobuf_and_the_objects_arrive_whole(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("create", "namespace", "shop")
    await kubectl("create", "configmap", "settings", "--from-literal=a=b", "-n", "shop")
    await kubectl("create", "deployment", "web", "--image=nginx", "--replicas=0", "--port=80", "-n", "shop")
    await kubectl("create", "secret", "generic", "token", "--from-literal=k=v", "-n", "shop")
    await kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", "-n", "shop")
    await kubectl("create", "rolebinding", "view", "--clusterrole=view", "--user=ann", "-n", "shop")
    assert emulator.requests.count("create") == 6
    assert (emulator.get("ns", "shop") or {})["status"] == {"phase": "Active"}
    assert (emulator.get("cm", "settings", "shop") or {})["data"] == {"a": "b"}
    web = emulator.get("deploy", "web", "shop") or {}
    assert web["spec"]["replicas"] == 0  # an explicit 0 survives (a pointer field in Go)
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"]) == ("nginx", [{"containerPort": 80}])
    assert (emulator.get("secret", "token", "shop") or {})["data"] == {"k": "dg=="}
    assert (emulator.get("svc", "web", "shop") or {})["spec"]["ports"][0]["targetPort"] == 8080
    assert (emulator.get("rolebinding", "view", "shop") or {})["subjects"] == [
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "ann"}
    ]
    rows = table((await kubectl("get", "deploy", "-n", "shop")).out)
    assert rows[1][:2] == ["web", "0/0"]


SERVER_SIDE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web, tier: front}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
"""


async def test_server_side_apply_conflicts_between_field_managers(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("apply", "--server-side", "-f", "-", stdin=SERVER_SIDE)
    three = SERVER_SIDE.replace("replicas: 2", "replicas: 3")
    refused = await kubectl("apply", "--server-side", "--field-manager=ci", "-f", "-", stdin=three, check=False)
    assert refused.code == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in refused.err
    await kubectl("apply", "--server-side", "--field-manager=ci", "--force-conflicts", "-f", "-", stdin=three)
    assert (emulator.get("deploy", "web") or {})["spec"]["replicas"] == 3

    await kubectl("scale", "deploy", "web", "--replicas=5")  # an update through /scale takes spec.replicas
    again = await kubectl("apply", "--server-side", "--field-manager=ci", "-f", "-", stdin=three, check=False)
    assert 'conflict with "kubectl" with subresource "scale" using apps/v1 at ' in again.err

    # A field one manager stops applying stays while another still applies it, and goes with the last one.
    untiered = SERVER_SIDE.replace("{app: web, tier: front}", "{app: web}")
    await kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=untiered)
    assert (emulator.get("deploy", "web") or {})["metadata"]["labels"] == {"app": "web", "tier": "front"}
    await kubectl(
        "apply",
        "--server-side",
        "--field-manager=ci",
        "--force-conflicts",
        "-f",
        "-",
        stdin=untiered.replace("replicas: 2", "replicas: 3"),
    )
    assert (emulator.get("deploy", "web") or {})["metadata"]["labels"] == {"app": "web"}


async def test_auth_can_i_is_answered(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    for args in (("create", "st"), ("delete", "pods", "-n", "kube-system")):
        answered = await kubectl("auth", "can-i", *args)
        assert answered.out.strip() == "yes"
    assert emulator.requests.count("create", "selfsubjectaccessreviews") == 2
