"""End-to-end fixtures: a real Prometheus (or VictoriaMetrics) scraping an exporter the test controls, the
Kubernetes API emulator in this process, and the ``autoscaler run`` process against both."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox, ScrapeTarget
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.guard import Guard, missing_binaries
from tests.service.cluster import CRD
from tests.victoriametrics import BINARY, PACKAGE, VictoriaMetricsSandbox
from tests.warm_prometheus import Scraped

ROOT = Path(__file__).resolve().parents[2]

_guard = Guard(
    {"prometheus": missing_binaries("prometheus"), "victoriametrics": missing_binaries(BINARY, package=PACKAGE)},
    str(Path(__file__).parent),
)

pytest_runtest_setup, pytest_runtest_logreport, pytest_deselected, pytest_sessionfinish = _guard.hooks()


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


@pytest.fixture(scope="module")
def victoriametrics(exporter: MetricsExporter) -> Iterator[VictoriaMetricsSandbox]:
    """A VictoriaMetrics single node in Prometheus' place, scraping the same exporter."""
    _guard.require("victoriametrics")
    exporter.set("queue_depth", {"queue": "jobs"}, 0)
    with VictoriaMetricsSandbox(scrape_targets=[ScrapeTarget(exporter.address)], scrape_interval=1.0) as sandbox:
        sandbox.wait_for('queue_depth{queue="jobs"}', timeout=30)
        yield sandbox


@pytest.fixture
async def cluster() -> AsyncIterator[KubeEmulator]:
    async with KubeEmulator(bookmark_interval=1.0, controllers=[WorkloadController(PodLifecycle())]) as emu:
        emu.install_crd(CRD)
        yield emu


class ServiceProcess:
    """One ``autoscaler run`` process; its log is kept for the failure report."""

    def __init__(self, workdir: Path, name: str, settings: dict[str, Any], args: Sequence[str] = ()) -> None:
        self.name = name
        self.args = list(args)
        self.config = workdir / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump(settings))
        self.log = workdir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ServiceProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "POD_NAME": self.name}
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autoscaler", "run", "--config", str(self.config), *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=ROOT,
            )
        return self

    def terminate(self) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for raw in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
        return out


@pytest.fixture
def services(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    started: list[ServiceProcess] = []

    def launch(
        name: str, emu: KubeEmulator, prom: PrometheusSandbox, args: Sequence[str] = (), **overrides: Any
    ) -> ServiceProcess:
        kubeconfig = emu.write_kubeconfig(tmp_path / "kubeconfig")
        settings: dict[str, Any] = {
            "prometheus": {"url": prom.url, "timeoutSeconds": 2, "retries": 0},
            "kubernetes": {"kubeconfig": str(kubeconfig)},
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
        process = ServiceProcess(tmp_path, name, settings, args).start()
        started.append(process)
        return process

    yield launch
    for process in started:
        process.kill()
    failed = getattr(request.node, "rep_call", None)
    if failed is None or failed.failed:
        for process in started:
            tail = process.log.read_text(errors="replace").splitlines()[-40:]
            print(f"---- {process.name} log (last 40 lines) ----", *tail, sep="\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]


async def until(check: Any, seconds: float = 30.0, what: str = "condition") -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}")
