"""The service's start-up when it cannot start: what it began is stopped and put back."""

from __future__ import annotations

import asyncio
import gc
import socket
from pathlib import Path

import pytest

from autoscaler.service.app import Service
from autoscaler.service.settings import load_service_settings


async def test_a_start_up_that_fails_leaves_nothing_running_and_the_collector_as_it_was(tmp_path: Path) -> None:
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    # A kubeconfig that loads (the client is made before the HTTP server listens; nothing dials it here).
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    with socket.socket() as taken:  # the HTTP port is taken: the server cannot listen
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = load_service_settings(
            None,
            flags={
                ("http", "address"): "127.0.0.1",
                ("http", "port"): taken.getsockname()[1],
                ("prometheus", "url"): "http://127.0.0.1:9",
                ("kubernetes", "kubeconfig"): str(kubeconfig),
            },
            environ={},
        )
        service = Service(settings, identity="autoscaler-0")
        with pytest.raises(OSError):
            await service.run(asyncio.Event())
    await asyncio.sleep(0)
    running = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert running == []  # the loop-lag monitor among them before: started ahead of the cleanup's reach
    assert (gc.get_threshold(), gc.isenabled()) == (thresholds, enabled)
