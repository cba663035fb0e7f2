"""``python -m kube_emulator`` in its own process, reached through a kubeconfig."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import yaml
from kubernetes_asyncio import client, config

from .builders import TARGET_CRD_YAML, deployment

REPOSITORY = Path(__file__).resolve().parents[2]


async def test_standalone_process_with_seed_and_kubeconfig(tmp_path: Path) -> None:
    seed = tmp_path / "seed.yaml"
    scaler = {
        "apiVersion": "example.dev/v1",
        "kind": "Scaler",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"replicas": 2},
    }
    # Instances before their CRD and in a namespace nobody declared: the loader copes.
    seed.write_text(yaml.safe_dump_all([scaler, deployment(namespace="demo", replicas=2)]) + "---\n" + TARGET_CRD_YAML)
    kubeconfig = tmp_path / "kubeconfig"
    environment = dict(os.environ, PYTHONPATH=str(REPOSITORY))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kube_emulator",
        "--port",
        "0",
        "--seed",
        str(seed),
        "--kubeconfig",
        str(kubeconfig),
        "--controllers",
        "--pod-start-delay",
        "0",
        "--pod-ready-delay",
        "0",
        cwd=REPOSITORY,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        banner = await asyncio.wait_for(process.stdout.readline(), 20)
        assert b"listening on http://127.0.0.1:" in banner
        assert kubeconfig.exists()
        async with await config.new_client_from_config(config_file=str(kubeconfig)) as api:
            apps = client.AppsV1Api(api)
            for _ in range(100):  # the controller makes the pods Ready right away
                status = (await apps.read_namespaced_deployment_status("web", "demo")).status
                if status.ready_replicas == 2:
                    break
                await asyncio.sleep(0.05)
            assert status.ready_replicas == 2
            custom = client.CustomObjectsApi(api)
            scale = await custom.get_namespaced_custom_object_scale("example.dev", "v1", "demo", "scalers", "web")
            assert scale["spec"]["replicas"] == 2
    finally:
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 10)
    assert code == 0
