"""A Kubernetes API emulator on loopback, with the semantics the autoscaler relies on.

Start it with :class:`KubeEmulator`; see ``docs/emulator.md`` for what it supports.
"""

from kube_emulator.clock import Clock, ManualClock, SystemClock
from kube_emulator.controllers import WorkloadController
from kube_emulator.errors import ApiError
from kube_emulator.faults import (
    Conflict,
    Delay,
    Disconnect,
    DropWatch,
    ExpireWatch,
    FaultInjector,
    FaultRule,
    Respond,
)
from kube_emulator.kubelet import PodLifecycle
from kube_emulator.patches import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from kube_emulator.requestlog import RequestLog, RequestRecord
from kube_emulator.resources import ResourceType, ScaleSubresource
from kube_emulator.server import Controller, KubeEmulator

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "ApiError",
    "Clock",
    "Conflict",
    "Controller",
    "Delay",
    "Disconnect",
    "DropWatch",
    "ExpireWatch",
    "FaultInjector",
    "FaultRule",
    "KubeEmulator",
    "ManualClock",
    "PodLifecycle",
    "RequestLog",
    "RequestRecord",
    "ResourceType",
    "Respond",
    "ScaleSubresource",
    "SystemClock",
    "WorkloadController",
]
