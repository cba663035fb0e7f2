"""The benchmark stops its services off the loop its in-process emulator answers on: a service's graceful
shutdown (its Lease released, its watches closed) then ends in milliseconds, and the benchmark's shutdown
figure is the service's own. A harness that waited on that loop held every service's last requests
unanswered until the service gave up, after its whole budget."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from kube_emulator import KubeEmulator
from tests.bench_modules import servicebench
from tests.service.cluster import CRD


@pytest.fixture
def process() -> Iterator[ModuleType]:
    with servicebench("process") as module:
        yield module


async def test_a_service_stopped_by_the_harness_releases_its_lease_and_stops_at_once(
    process: ModuleType, tmp_path: Path
) -> None:
    async with KubeEmulator() as emu:
        emu.install_crd(CRD)
        settings = {
            "http": {"address": "127.0.0.1", "port": process.free_port()},
            "kubernetes": {"kubeconfig": str(emu.write_kubeconfig(tmp_path / "kubeconfig"))},
            "leaderElection": {"enabled": True, "leaseNamespace": "default"},
            "logging": {"format": "json", "level": "info"},
            "prometheus": {"url": "http://127.0.0.1:9"},
        }
        service = process.ServiceProcess(tmp_path, "service", settings).start()
        try:
            deadline = time.monotonic() + 60
            while not any(line.get("event") == "caches synced" for line in service.log_lines()):
                assert service.alive() and time.monotonic() < deadline, service.log.read_text()
                await asyncio.sleep(0.1)
            lease = emu.get("leases", "autoscaler")
            assert lease is not None and lease["spec"]["holderIdentity"].startswith("service_")  # POD_NAME_pid
        finally:
            [code] = await process.stop_all([service])
        assert code == 0
        seconds = service.shutdown_seconds()
        assert seconds is not None and seconds < 2.0, service.log.read_text()  # 5.0, the budget, waiting on the loop
        assert not [x for x in service.log_lines() if x.get("level") in ("warning", "error")]
        assert service.exit_seconds is not None and service.exit_seconds < 5.0  # SIGTERM → the process gone
        lease = emu.get("leases", "autoscaler")
        assert lease is not None and not lease["spec"].get("holderIdentity")  # released for a standby
