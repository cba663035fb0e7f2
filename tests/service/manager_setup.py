"""The manager as the test_manager*.py modules run it: a 0.3 s period, no jitter, a 1 s downscale
stabilization window, and a metrics source the test controls.
"""

from __future__ import annotations

import contextlib
from typing import Any

from autoscaler.core.settings import ControllerSettings
from autoscaler.kube.api import KubeApi
from autoscaler.service.manager import Manager
from kube_emulator import KubeEmulator
from tests.service.cluster import FakeMetrics, running_manager

PERIOD = 0.3


def manager_options(**kwargs: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "settings": ControllerSettings(downscale_stabilization_window=1.0),
        "period": PERIOD,
        "jitter": 0.0,
        "batch_window": 0.05,
    }
    return {**options, **kwargs}


def make_manager(emu: KubeEmulator, api: Any, metrics: FakeMetrics, **kwargs: Any) -> Manager:
    return Manager(KubeApi(api), metrics.read_many, **manager_options(**kwargs))


def running(emu: KubeEmulator, metrics: FakeMetrics, **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Manager]:
    """A started manager with this module's settings (see :func:`running_manager`)."""
    return running_manager(emu, metrics.read_many, **manager_options(**kwargs))


FAST_BEHAVIOR = {"scaleDown": {"stabilizationWindowSeconds": 0}}
