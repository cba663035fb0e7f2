"""The built-in resource types the emulator serves, with the per-kind facts that matter.

Only kinds the autoscaler, its demo or its install manifests (``kubectl apply -k manifests/``) touch
are listed; adding one is a row here plus,
if it has special create/update rules, an entry in :mod:`kube_emulator.strategies`.
"""

from __future__ import annotations

from kube_emulator.conversions import EVENTS_V1_CONVERTER
from kube_emulator.resources import ResourceType, ScaleSubresource

WORKLOAD_SCALE = ScaleSubresource(selector_from_spec_selector=True)

POD_FIELDS = frozenset(
    {
        "status.phase",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.podIP",
        "status.nominatedNodeName",
    }
)
EVENT_FIELDS = frozenset(
    {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    }
)
EVENTS_V1_FIELDS = frozenset(
    {
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "regarding.apiVersion",
        "reason",
        "reportingController",
        "type",
    }
)

NAMESPACES = ResourceType(
    group="",
    version="v1",
    plural="namespaces",
    singular="namespace",
    kind="Namespace",
    namespaced=False,
    short_names=("ns",),
    has_status=True,
    has_generation=False,
    delete_returns_object=True,
    selectable_fields=frozenset({"status.phase"}),
    name_rule="label",
)
PODS = ResourceType(
    group="",
    version="v1",
    plural="pods",
    singular="pod",
    kind="Pod",
    namespaced=True,
    short_names=("po",),
    categories=("all",),
    has_status=True,
    delete_returns_object=True,
    selectable_fields=POD_FIELDS,
)
EVENTS = ResourceType(
    group="",
    version="v1",
    plural="events",
    singular="event",
    kind="Event",
    namespaced=True,
    short_names=("ev",),
    has_generation=False,
    selectable_fields=EVENT_FIELDS,
)
SERVICES = ResourceType(
    group="",
    version="v1",
    plural="services",
    singular="service",
    kind="Service",
    namespaced=True,
    short_names=("svc",),
    categories=("all",),
    has_status=True,
    has_generation=False,
    name_rule="label",
)
CONFIGMAPS = ResourceType(
    group="",
    version="v1",
    plural="configmaps",
    singular="configmap",
    kind="ConfigMap",
    namespaced=True,
    short_names=("cm",),
    has_generation=False,
)
NODES = ResourceType(
    group="",
    version="v1",
    plural="nodes",
    singular="node",
    kind="Node",
    namespaced=False,
    short_names=("no",),
    has_status=True,
    has_generation=False,
)
DEPLOYMENTS = ResourceType(
    group="apps",
    version="v1",
    plural="deployments",
    singular="deployment",
    kind="Deployment",
    namespaced=True,
    short_names=("deploy",),
    categories=("all",),
    has_status=True,
    scale=WORKLOAD_SCALE,
    generation_tracks_annotations=True,
)
STATEFULSETS = ResourceType(
    group="apps",
    version="v1",
    plural="statefulsets",
    singular="statefulset",
    kind="StatefulSet",
    namespaced=True,
    short_names=("sts",),
    categories=("all",),
    has_status=True,
    scale=WORKLOAD_SCALE,
)
REPLICASETS = ResourceType(
    group="apps",
    version="v1",
    plural="replicasets",
    singular="replicaset",
    kind="ReplicaSet",
    namespaced=True,
    short_names=("rs",),
    categories=("all",),
    has_status=True,
    scale=WORKLOAD_SCALE,
)
# Listed for ``autoscaler convert --from-cluster`` (served as autoscaling/v2 only, as clusters
# serve every HPA whichever version it was written in).
HORIZONTAL_POD_AUTOSCALERS = ResourceType(
    group="autoscaling",
    version="v2",
    plural="horizontalpodautoscalers",
    singular="horizontalpodautoscaler",
    kind="HorizontalPodAutoscaler",
    namespaced=True,
    short_names=("hpa",),
    categories=("all",),
    has_status=True,
)
LEASES = ResourceType(
    group="coordination.k8s.io",
    version="v1",
    plural="leases",
    singular="lease",
    kind="Lease",
    namespaced=True,
    has_generation=False,
)
EVENTS_V1 = ResourceType(
    group="events.k8s.io",
    version="v1",
    plural="events",
    singular="event",
    kind="Event",
    namespaced=True,
    short_names=("ev",),
    has_generation=False,
    selectable_fields=EVENTS_V1_FIELDS,
    storage=EVENTS.storage_key,
    converter=EVENTS_V1_CONVERTER,
)
SECRETS = ResourceType(
    group="",
    version="v1",
    plural="secrets",
    singular="secret",
    kind="Secret",
    namespaced=True,
    has_generation=False,
    selectable_fields=frozenset({"type"}),
)
SERVICE_ACCOUNTS = ResourceType(
    group="",
    version="v1",
    plural="serviceaccounts",
    singular="serviceaccount",
    kind="ServiceAccount",
    namespaced=True,
    short_names=("sa",),
    has_generation=False,
)
_RBAC = "rbac.authorization.k8s.io"
ROLES = ResourceType(
    group=_RBAC,
    version="v1",
    plural="roles",
    singular="role",
    kind="Role",
    namespaced=True,
    has_generation=False,
    name_rule="path-segment",
)
CLUSTER_ROLES = ResourceType(
    group=_RBAC,
    version="v1",
    plural="clusterroles",
    singular="clusterrole",
    kind="ClusterRole",
    namespaced=False,
    has_generation=False,
    name_rule="path-segment",
)
ROLE_BINDINGS = ResourceType(
    group=_RBAC,
    version="v1",
    plural="rolebindings",
    singular="rolebinding",
    kind="RoleBinding",
    namespaced=True,
    has_generation=False,
    name_rule="path-segment",
)
CLUSTER_ROLE_BINDINGS = ResourceType(
    group=_RBAC,
    version="v1",
    plural="clusterrolebindings",
    singular="clusterrolebinding",
    kind="ClusterRoleBinding",
    namespaced=False,
    has_generation=False,
    name_rule="path-segment",
)
POD_DISRUPTION_BUDGETS = ResourceType(
    group="policy",
    version="v1",
    plural="poddisruptionbudgets",
    singular="poddisruptionbudget",
    kind="PodDisruptionBudget",
    namespaced=True,
    short_names=("pdb",),
    has_status=True,
)
# The install's NetworkPolicy (manifests/networkpolicy.yaml): stored and served, never enforced.
NETWORK_POLICIES = ResourceType(
    group="networking.k8s.io",
    version="v1",
    plural="networkpolicies",
    singular="networkpolicy",
    kind="NetworkPolicy",
    namespaced=True,
    short_names=("netpol",),
)
SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(
    group="authorization.k8s.io",
    version="v1",
    plural="selfsubjectaccessreviews",
    singular="",
    kind="SelfSubjectAccessReview",
    namespaced=False,
    has_generation=False,
    verbs=("create",),
)
CUSTOM_RESOURCE_DEFINITIONS = ResourceType(
    group="apiextensions.k8s.io",
    version="v1",
    plural="customresourcedefinitions",
    singular="customresourcedefinition",
    kind="CustomResourceDefinition",
    namespaced=False,
    short_names=("crd", "crds"),
    categories=("api-extensions",),
    has_status=True,
)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    NAMESPACES,
    PODS,
    EVENTS,
    SERVICES,
    CONFIGMAPS,
    NODES,
    DEPLOYMENTS,
    STATEFULSETS,
    REPLICASETS,
    HORIZONTAL_POD_AUTOSCALERS,
    LEASES,
    EVENTS_V1,
    SECRETS,
    SERVICE_ACCOUNTS,
    ROLES,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    CLUSTER_ROLE_BINDINGS,
    POD_DISRUPTION_BUDGETS,
    NETWORK_POLICIES,
    SELF_SUBJECT_ACCESS_REVIEWS,
    CUSTOM_RESOURCE_DEFINITIONS,
)
