"""The benchmark's reader of status writes (bench/servicebench): it reads only the request log's new records,
and a write still in flight is read again until it is answered; a refused one never counts."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from kube_emulator import KubeEmulator
from kube_emulator.requestinfo import RequestInfo
from tests.bench_modules import servicebench


@pytest.fixture
def window() -> Iterator[ModuleType]:
    with servicebench("window") as module:
        yield module


def status_patch(name: str) -> RequestInfo:
    path = f"/apis/autoscaler.dev/v1alpha1/namespaces/ns/scalingtargets/{name}/status"
    return RequestInfo(
        "PATCH", path, True, "patch", "autoscaler.dev", "v1alpha1", "ns", "scalingtargets", name, subresource="status"
    )


def test_status_writes_are_read_as_the_log_grows(window: ModuleType) -> None:
    emu = KubeEmulator()
    early = emu.requests.start(status_patch("a"), "")
    early.finish(200)  # before the reader is made: read all the same
    reader = window.StatusWrites(emu)
    in_flight = emu.requests.start(status_patch("b"), "")
    emu.requests.start(RequestInfo("GET", "/api/v1/pods", True, "list", resource="pods"), "").finish(200)
    emu.requests.start(status_patch("c"), "").finish(409)
    assert reader.update() == {"ns/a"}
    in_flight.finish(200)
    assert reader.update() == {"ns/a", "ns/b"}
    emu.requests.start(status_patch("c"), "").finish(200)
    assert reader.update() == {"ns/a", "ns/b", "ns/c"}
