"""The chaos suite's fixtures: a real Prometheus behind a misbehaving proxy, the API emulator behind one
misbehaving TCP relay per service instance, and real ``autoscaler run`` processes.

Layout of one test::

    exporter ──scraped by──▶ Prometheus ◀── PrometheusProxy ◀──┐
                                                              ├── autoscaler run "a" (its own relay)
    KubeEmulator ◀── TcpRelay "a" ◀───────────────────────────┘
                 ◀── TcpRelay "b" ◀── autoscaler run "b" …

The suite needs the ``prometheus`` and ``faketime`` Debian packages; with AUTOSCALER_REQUIRE_SERVERS=1
(CI) a missing one fails the tests instead of skipping them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.chaos.promproxy import PrometheusProxy
from tests.chaos.relay import TcpRelay
from tests.chaos.service import ServiceProcess, libfaketime
from tests.chaos.timeline import Timeline
from tests.guard import Guard, missing_binaries
from tests.service.cluster import CRD
from tests.warm_prometheus import Scraped

_guard = Guard(
    {
        "prometheus": missing_binaries("prometheus"),
        "faketime": [] if libfaketime() else ["libfaketime is not installed (Debian package 'faketime')"],
    },
    str(Path(__file__).parent),
)

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.prometheus)


@pytest.fixture(scope="module")
def exporter(scraped: Scraped) -> MetricsExporter:
    return scraped.exporter


@pytest.fixture(scope="module")
def prometheus(scraped: Scraped) -> PrometheusSandbox:
    """The module's own Prometheus, scraping its exporter every second; started while the module before ran,
    it has its first samples already (tests/warm_prometheus.py)."""
    _guard.require("prometheus")
    assert scraped.prometheus is not None
    scraped.prometheus.wait_for('queue_depth{queue="jobs"}', timeout=30)
    return scraped.prometheus


@pytest.fixture
async def cluster() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=1.0, controllers=[WorkloadController(PodLifecycle())]) as emu:
        emu.install_crd(CRD)
        yield emu


@pytest.fixture
async def proxy(prometheus: PrometheusSandbox) -> AsyncIterator[PrometheusProxy]:
    async with PrometheusProxy(prometheus.url) as running:
        yield running


class Chaos:
    """Starts ``autoscaler run`` instances, each behind its own relay, and records what they do."""

    def __init__(self, workdir: Path, cluster: KubeEmulator, proxy: PrometheusProxy) -> None:
        self.workdir = workdir
        self.cluster = cluster
        self.proxy = proxy
        self.instances: list[ServiceProcess] = []
        self.relays: list[TcpRelay] = []
        self.timelines: list[Timeline] = []

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """Fast defaults: a 1 s period and a 3 s lease, so a fault's whole story fits in seconds."""
        settings: dict[str, Any] = {
            "prometheus": {"url": self.proxy.url, "timeoutSeconds": 2, "retries": 0},
            "kubernetes": {},
            "sync": {"periodSeconds": 1, "jitter": 0.0, "batchWindowSeconds": 0.05},
            "controller": {"downscaleStabilizationWindowSeconds": 4},
            "http": {"address": "127.0.0.1", "port": 0},
            "leaderElection": {
                "enabled": True,
                "leaseNamespace": "default",
                "leaseDurationSeconds": 3,
                "renewDeadlineSeconds": 2,
                "retryPeriodSeconds": 0.5,
            },
            "logging": {"format": "json", "level": "info"},
        }
        for key, value in overrides.items():
            settings[key] = {**settings.get(key, {}), **value} if isinstance(value, dict) else value
        return settings

    async def service(
        self,
        name: str,
        *,
        clock_offset: float | None = None,
        start: bool = True,
        token_file: Path | None = None,
        **overrides: Any,
    ) -> ServiceProcess:
        """One ``autoscaler run`` behind its own relay. ``token_file``: the kubeconfig's user reads its
        bearer token from this file (``tokenFile``), as a projected service-account token is read."""
        relay = await TcpRelay("127.0.0.1", self.cluster.port).start()
        self.relays.append(relay)
        kubeconfig = self.cluster.kubeconfig()
        kubeconfig["clusters"][0]["cluster"]["server"] = relay.url
        if token_file is not None:
            kubeconfig["users"][0]["user"] = {"tokenFile": str(token_file)}
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig))
        settings = self.settings(**overrides)
        settings["kubernetes"] = {**settings.get("kubernetes", {}), "kubeconfig": str(path)}
        process = ServiceProcess(self.workdir, name, settings, relay)
        self.instances.append(process)
        if start:
            process.start(clock_offset=clock_offset)
        return process

    def timeline(self, name: str, namespace: str = "default") -> Timeline:
        timeline = Timeline(self.cluster, name, namespace).start()
        self.timelines.append(timeline)
        return timeline

    async def close(self) -> None:
        for process in self.instances:
            process.kill()
        for timeline in self.timelines:
            await timeline.stop()
        for relay in self.relays:
            await relay.stop()


@pytest.fixture
async def chaos(
    tmp_path: Path, cluster: KubeEmulator, proxy: PrometheusProxy, request: pytest.FixtureRequest
) -> AsyncIterator[Chaos]:
    _guard.require("faketime")
    running = Chaos(tmp_path, cluster, proxy)
    try:
        yield running
    finally:
        await running.close()
        failed = getattr(request.node, "rep_call", None)
        if failed is None or failed.failed:
            for process in running.instances:
                tail = process.log.read_text(errors="replace").splitlines()[-60:] if process.log.exists() else []
                print(f"---- {process.name} log (last 60 lines) ----", *tail, sep="\n")
            for timeline in running.timelines:
                print(f"---- timeline of {timeline.name} ----", timeline.describe(), sep="\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
