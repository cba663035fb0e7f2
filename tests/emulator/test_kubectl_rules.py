"""The ScalingTarget CRD's CEL rules as a person meets them: ``kubectl apply`` of a target the service would
refuse fails with the rule's message, and ``kubectl get st`` shows which targets cannot scale.

The real ``kubectl`` against the emulator, which evaluates the CRD's ``x-kubernetes-validations`` with
cel-python as the API server does with cel-go."""

from __future__ import annotations

import pytest

from kube_emulator import KubeEmulator
from tests.manifests import MANIFESTS

from .kubectl import Kubectl, table

pytestmark = pytest.mark.kubectl


def target(name: str, spec: str) -> str:
    return f"""
apiVersion: autoscaler.dev/v1alpha1
kind: ScalingTarget
metadata: {{name: {name}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
{spec}
"""


BOUNDS = target("bounds", "  minReplicas: 6\n  maxReplicas: 5")
TARGET_TYPE = target(
    "target-type",
    """  maxReplicas: 5
  metrics:
  - type: External
    external: {metric: {name: queue}, query: 'sum(queue)', target: {type: Utilization, averageUtilization: 50}}""",
)
NO_QUERY = target(
    "no-query",
    """  maxReplicas: 5
  metrics:
  - type: Pods
    pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: '10'}}""",
)
BAD_QUANTITY = target(
    "bad-quantity",
    """  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 1.5 GB}}""",
)
GOOD = target(
    "good",
    """  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  - type: External
    external: {metric: {name: queue}, query: 'sum(queue)', target: {type: Value, value: 1500m}}""",
)

EXPECTED = {
    BOUNDS: 'The ScalingTarget "bounds" is invalid: spec.maxReplicas: Invalid value: "object": '
    "must be greater than or equal to minReplicas",
    TARGET_TYPE: 'The ScalingTarget "target-type" is invalid: spec.metrics[0].external.target.type: Invalid value: '
    '"object": Utilization is not a valid target type for an External metric (valid only for Resource and '
    "ContainerResource metrics; use one of Value, AverageValue)",
    NO_QUERY: 'The ScalingTarget "no-query" is invalid: spec.metrics[0].pods.query: Required value: '
    "the PromQL this metric is read from",
    BAD_QUANTITY: 'The ScalingTarget "bad-quantity" is invalid: spec.metrics[0].resource.target.averageValue: '
    'Invalid value: "": must be a quantity (a string such as "500m" or "1.5Gi", or a number)',
}


async def test_apply_of_a_target_the_service_would_refuse_fails_with_the_rules_message(
    kubectl: Kubectl, emulator: KubeEmulator
) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    for manifest, message in EXPECTED.items():
        refused = await kubectl("apply", "-f", "-", stdin=manifest, check=False)
        assert refused.code == 1, refused
        assert refused.err.strip() == message
    assert emulator.list("scalingtargets.autoscaler.dev") == []

    applied = await kubectl("apply", "-f", "-", stdin=GOOD)
    assert applied.out.strip() == "scalingtarget.autoscaler.dev/good created"
    # an edit that breaks a rule is refused too (kubectl patch: an update of the stored object)
    patched = await kubectl("patch", "st", "good", "--type=merge", "-p", '{"spec":{"maxReplicas":1}}', check=False)
    assert patched.code == 1
    assert 'spec.maxReplicas: Invalid value: "object": must be greater than or equal to minReplicas' in patched.err


async def test_get_st_shows_whether_a_target_can_scale_and_why_not(kubectl: Kubectl, emulator: KubeEmulator) -> None:
    await kubectl("apply", "-k", str(MANIFESTS))
    await kubectl("apply", "-f", "-", stdin=GOOD + "---\n" + GOOD.replace("name: good", "name: stuck"))
    conditions = {
        "good": [
            {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"},
            {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"},
        ],
        "stuck": [{"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric"}],
    }
    for name, listed in conditions.items():
        emulator.patch("st", name, {"status": {"conditions": listed}}, subresource="status")

    rows = table((await kubectl("get", "st")).out)
    assert rows[0][-3:] == ["ACTIVE", "REASON", "AGE"]
    by_name = {row[0]: row for row in rows[1:]}
    # the cells before them are empty here (no replicas in the status, no pause): the last ones are compared
    assert by_name["good"][-3:-1] == ["True", "ValidMetricFound"]
    assert by_name["stuck"][-3:-1] == ["False", "FailedGetExternalMetric"]
