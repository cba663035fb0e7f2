"""``autoscaler convert`` of KEDA's authentication parameters that are no credential: a custom header's name
read from its Secret (its value a Secret reference), a basic auth username from its ConfigMap — from the input
files and through the cluster (the API emulator, objects put with the real kubectl) — never writing a Secret's
credential."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.service.settings import parse_service_settings
from kube_emulator import KubeEmulator
from tests.convert.keda_helpers import queue_worker
from tests.convert.test_cli import SCALED_OBJECT_CRD, TRIGGER_AUTHENTICATION_CRD, convert, kubectl

# The credentials in the Secrets of keda_auth_objects: none may be in any output.
HEADER_VALUE, PASSWORD = "k3y-VALUE-never-written", "pa55-VALUE-never-written"


def _keda_worker(name: str, modes: str, auth: str, refs: dict[str, list[dict[str, str]]]) -> list[dict[str, Any]]:
    document = queue_worker()
    document["metadata"]["name"] = name
    document["spec"]["scaleTargetRef"]["name"] = name
    trigger = document["spec"]["triggers"][0]
    trigger["metadata"]["authModes"] = modes
    trigger["authenticationRef"] = {"name": auth}
    meta = {"name": auth, "namespace": "jobs"}
    authentication = {"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication", "metadata": meta}
    return [document, {**authentication, "spec": refs}]


def keda_auth_objects() -> list[dict[str, Any]]:
    """Two ScaledObjects of namespace jobs: one with KEDA's custom auth, its header's name and value in a Secret;
    one with basic auth, its username in a ConfigMap; with those objects."""

    def encoded(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    return [
        *_keda_worker(
            "worker",
            "custom",
            "custom-auth",
            {
                "secretTargetRef": [
                    {"parameter": "customAuthHeader", "name": "api-key", "key": "header"},
                    {"parameter": "customAuthValue", "name": "api-key", "key": "value"},
                ]
            },
        ),
        *_keda_worker(
            "reporter",
            "basic",
            "basic-auth",
            {
                "configMapTargetRef": [{"parameter": "username", "name": "prom-user", "key": "user"}],
                "secretTargetRef": [{"parameter": "password", "name": "prom-basic", "key": "password"}],
            },
        ),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "api-key", "namespace": "jobs"},
            "data": {"header": encoded("X-Api-Key"), "value": encoded(HEADER_VALUE)},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "prom-user", "namespace": "jobs"},
            "data": {"user": "scraper"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "prom-basic", "namespace": "jobs"},
            "stringData": {"password": PASSWORD},
        },
    ]


KEDA_AUTH_BACKENDS = {
    "prometheus-monitoring": {
        "url": "http://prometheus.monitoring.svc.cluster.local:9090",
        "headerSecrets": {"X-Api-Key": {"namespace": "jobs", "name": "api-key", "key": "value"}},
    },
    "prometheus-monitoring-2": {
        "url": "http://prometheus.monitoring.svc.cluster.local:9090",
        "basicAuth": {
            "username": "scraper",
            "passwordSecret": {"namespace": "jobs", "name": "prom-basic", "key": "password"},
        },
    },
}


def without_credentials(texts: list[str]) -> bool:
    return not [text for text in texts if HEADER_VALUE in text or PASSWORD in text]


def test_keda_auth_from_configmaps_and_secrets_converts_without_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom auth header's name read from its Secret, a basic auth username from its ConfigMap: --strict
    passes, the settings parser reads the fragment, and no credential of the Secrets given is anywhere."""
    given = tmp_path / "keda.yaml"
    given.write_text(yaml.safe_dump_all(keda_auth_objects()))
    out = tmp_path / "targets"
    assert convert(str(given), "--strict", "--output-dir", str(out)) == 0, capsys.readouterr().err
    shown = [*capsys.readouterr(), *(path.read_text() for path in out.iterdir())]
    assert convert(str(given), "--strict") == 0
    shown.extend(capsys.readouterr())
    assert without_credentials(shown)
    backends = yaml.safe_load((out / "autoscaler-backends.yaml").read_text())["prometheus"]
    assert backends["backends"] == KEDA_AUTH_BACKENDS
    settings = parse_service_settings({"prometheus": {"url": "http://prometheus:9090", **backends}})
    assert settings.prometheus_backends["prometheus-monitoring"].header_secrets
    assert settings.prometheus_backends["prometheus-monitoring-2"].basic_auth is not None


@pytest.mark.kubectl
async def test_keda_auth_keys_read_from_the_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--from-cluster reads the one key each such parameter names; without the object, the loss is reported."""
    async with KubeEmulator() as emu:
        emu.install_crd(SCALED_OBJECT_CRD)
        emu.install_crd(TRIGGER_AUTHENTICATION_CRD)
        config = emu.write_kubeconfig(tmp_path / "kubeconfig")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jobs"}}
        manifests = yaml.safe_dump_all([namespace, *keda_auth_objects()])
        await asyncio.to_thread(kubectl, config, "apply", "--validate=false", "-f", "-", stdin=manifests)
        args = ("--from-cluster", "--kubeconfig", str(config), "-n", "jobs")
        out = tmp_path / "targets"
        code = await asyncio.to_thread(convert, *args, "--strict", "--output-dir", str(out))
        shown = [*capsys.readouterr(), *(path.read_text() for path in out.iterdir())]
        assert code == 0, shown
        assert without_credentials(shown)
        backends = yaml.safe_load((out / "autoscaler-backends.yaml").read_text())["prometheus"]["backends"]
        # the cluster lists the ScaledObjects by name: the backends are named in that order
        assert sorted(backends.values(), key=str) == sorted(KEDA_AUTH_BACKENDS.values(), key=str)
        await asyncio.to_thread(kubectl, config, "delete", "secret", "api-key", "-n", "jobs")
        code = await asyncio.to_thread(convert, *args)
        err = capsys.readouterr().err
        assert code == 3, err
        assert "Secret jobs/api-key key 'header' is not in the input files or the cluster" in err
        assert "reading Secret jobs/api-key failed" in err
