"""The demo's time constants (in demo seconds) and the service settings they compress into.

The settings are built directly rather than parsed from a file: the demo's compressed sync period
goes below the 1 s minimum a settings file allows (docs/demo.md).
"""

from __future__ import annotations

from autoscaler.core.settings import ControllerSettings
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.service.settings import (
    HttpSettings,
    KubernetesSettings,
    LeaderElectionSettings,
    LoggingSettings,
    ServiceSettings,
    ServingSettings,
    SyncSettings,
    TelemetrySettings,
)
from autoscaler_sandbox.timescale import TimeScale

SYNC_PERIOD = 15.0  # the service's default
POD_START_DELAY = 10.0  # scheduled, image pulled, containers started
POD_READY_DELAY = 20.0  # then warming up until the readiness probe passes
CPU_RATE_WINDOW = 30.0  # the CPU rate() window (and the sample window of the readiness rules)
CPU_INITIALIZATION_PERIOD = 300.0  # kube-controller-manager's defaults, compressed like the rest
INITIAL_READINESS_DELAY = 30.0
DOWNSCALE_STABILIZATION = 300.0  # unused: the target's behavior sets its own window
HEARTBEAT = 60.0  # a timeline line at least this often
BATCH_WINDOW = 0.2  # wall seconds at most: how long metric reads wait to share a query


def service_settings(scale: TimeScale, prometheus_url: str, rate_window: float, kubeconfig: str) -> ServiceSettings:
    """``autoscaler run``'s settings for the sandbox, every duration divided by the speed."""
    period = scale.wall(SYNC_PERIOD)
    return ServiceSettings(
        prometheus=PrometheusSettings(url=prometheus_url, timeout_seconds=2.0, retries=1, cpu_rate_window=rate_window),
        kubernetes=KubernetesSettings(kubeconfig=kubeconfig),
        # No jitter: one sync every period, so the timeline's times line up.
        sync=SyncSettings(period_seconds=period, jitter=0.0, batch_window_seconds=min(BATCH_WINDOW, period / 20)),
        controller=ControllerSettings(
            cpu_initialization_period=scale.wall(CPU_INITIALIZATION_PERIOD),
            initial_readiness_delay=scale.wall(INITIAL_READINESS_DELAY),
            downscale_stabilization_window=scale.wall(DOWNSCALE_STABILIZATION),
        ),
        serving=ServingSettings(leader_election=LeaderElectionSettings(enabled=False)),
        telemetry=TelemetrySettings(
            http=HttpSettings(address="127.0.0.1", port=0), logging=LoggingSettings(format="json", level="info")
        ),
    )
