"""A Kubernetes API emulator on loopback, with the semantics the autoscaler relies on.

Start it with :class:`KubeEmulator`; see ``docs/emulator.md`` for what it supports.
"""

from autoscaler.emulator.clock import Clock, ManualClock, SystemClock
from autoscaler.emulator.controllers import PodLifecycle, WorkloadController
from autoscaler.emulator.errors import ApiError
from autoscaler.emulator.faults import (
    Conflict,
    Delay,
    Disconnect,
    DropWatch,
    ExpireWatch,
    FaultInjector,
    FaultRule,
    Respond,
)
from autoscaler.emulator.patches import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from autoscaler.emulator.requestlog import RequestLog, RequestRecord
from autoscaler.emulator.resources import ResourceType, ScaleSubresource
from autoscaler.emulator.server import Controller, KubeEmulator

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
