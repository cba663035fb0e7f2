"""Label sharding: which ScalingTargets this instance serves (docs/sharding.md).

Flux's convention, on Kubernetes itself: an instance started with a shard name (``--shard a``,
``sharding.shard``) lists and watches only the targets labelled ``<labelKey>=a``; an instance without one
serves exactly the targets that carry no shard label (``!<labelKey>``). The API server filters: an instance
never receives the other shards' targets (and should it send one, the target cache leaves it out:
:mod:`autoscaler.service.cluster.scope`). Each shard elects its own leader with its own Lease
(``<leaseName>-<shard>``), so every shard has a leader and standbys of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.kube.labels import dns_subdomain_problem, label_key_problem, label_value_problem
from autoscaler.values.fields import Obj

DEFAULT_LABEL_KEY = "autoscaler.dev/shard"


@dataclass(frozen=True, slots=True)
class ShardingSettings:
    shard: str | None = None  # None: the unsharded instance (targets without the label)
    label_key: str = DEFAULT_LABEL_KEY

    @property
    def label_selector(self) -> str:
        """The ``labelSelector`` of the targets' LIST and WATCH requests."""
        return f"{self.label_key}={self.shard}" if self.shard is not None else f"!{self.label_key}"

    def serves(self, labels: Mapping[str, str] | None) -> bool:
        """Whether a target with these labels is this instance's (the selector, applied here: for targets
        from a file, which no API server filters)."""
        present = labels or {}
        return present.get(self.label_key) == self.shard if self.shard is not None else self.label_key not in present

    def lease_name(self, base: str) -> str:
        """The Lease this instance's shard elects its leader with: one per shard."""
        return f"{base}-{self.shard}" if self.shard is not None else base

    @property
    def description(self) -> str:
        """For logs and messages: ``shard "a"``, or what the unsharded instance serves."""
        if self.shard is None:
            return f"the targets without the {self.label_key} label"
        return f'shard "{self.shard}"'


def read_sharding_settings(obj: Obj | None) -> ShardingSettings | None:
    """The ``sharding`` section (None, with errors, when it is invalid)."""
    if obj is None:
        return ShardingSettings()
    key = obj.string("labelKey", default=DEFAULT_LABEL_KEY, non_empty=True)
    raw = obj.value.get("shard")
    if isinstance(raw, int | float) and not isinstance(raw, bool):  # YAML reads shard: 1 as a number
        obj.raw("shard")
        obj.error("shard", f'must be a string, not a number (quote it: "{raw}")')
        shard = None
    else:
        shard = obj.string("shard", non_empty=True)
    if key is not None:
        problem = label_key_problem(key)
        if problem:
            obj.error("labelKey", f"not a valid label key: {problem}")
            key = None
    if shard is not None:
        problem = label_value_problem(shard)
        if problem:
            obj.error("shard", f"the shard name is a label value: {problem}")
            shard = None
    obj.finish()
    if key is None or (shard is None and obj.has("shard")):
        return None
    return ShardingSettings(shard, key)


def lease_name_problem(sharding: ShardingSettings, lease_name: str) -> str | None:
    """Why the shard's Lease name (``<leaseName>-<shard>``) cannot be an object name, or None. A shard name
    may be any label value; as a Lease name's suffix it must also be lowercase."""
    if sharding.shard is None or dns_subdomain_problem(lease_name) is not None:
        return None  # the lease name as configured is not this section's business
    name = sharding.lease_name(lease_name)
    problem = dns_subdomain_problem(name)
    return f'the shard\'s Lease would be named "{name}", which {problem}' if problem else None
