"""``autoscaler convert`` as a user runs it: files in, ScalingTargets out (stdout or a directory),
notes on stderr, exit code 2 with path-precise errors for bad input, and --from-cluster against
the API emulator, where the objects are put with the real kubectl."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.cli import main
from autoscaler.service.settings import parse_service_settings
from autoscaler_sandbox import PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.convert.helpers import ADAPTER_CONFIG, HPAS, SCALED_OBJECTS, documents, load_written


def convert(*args: str) -> int:
    return main(["convert", *args])


def test_files_to_stdout_each_a_valid_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # shop/api's kafka trigger does not convert: written without it, exit code 3 (never a silent 0)
    assert convert(str(HPAS), str(SCALED_OBJECTS), "--adapter-config", str(ADAPTER_CONFIG)) == 3
    captured = capsys.readouterr()
    written = documents(captured.out)
    assert [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in written] == [
        ("shop", "web"),
        ("shop", "api"),
        ("jobs", "worker"),
        ("shop", "api"),
    ]
    for index, document in enumerate(written):
        load_written(tmp_path, document, f"{index}.yaml")
    assert "# Converted by `autoscaler convert` from HorizontalPodAutoscaler shop/web" in captured.out
    assert "#   - spec.pollingInterval: syncPeriodSeconds 10" in captured.out
    # the backends fragment rides along as a comment, so the stream stays objects kubectl applies
    assert "#       prometheus-monitoring:\n#         url: http://prometheus.monitoring:9090" in captured.out
    # a change of where a metric is read is on stderr too
    assert (
        "ScaledObject jobs/worker: changed: spec.triggers[0]: read from backend 'prometheus-monitoring' "
        "(http://prometheus.monitoring:9090)"
    ) in captured.err
    assert "1 target(s) written without what did not convert" in captured.err
    # every loss is on stderr too, per object and field
    assert (
        "ScaledObject shop/api: warning: not converted: spec.triggers[3]: a 'kafka' trigger: only "
        "prometheus, cpu and memory triggers convert"
    ) in captured.err


def test_output_dir_and_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "targets"
    assert convert(str(SCALED_OBJECTS), "--output-dir", str(out), "--strict") == 2
    err = capsys.readouterr().err
    assert "ScaledObject shop/api: error: not converted: spec.triggers[3]: a 'kafka' trigger" in err
    # Only what converted without loss is written, with the backends it reads from and what the service needs.
    assert sorted(p.name for p in out.iterdir()) == ["autoscaler-backends.yaml", "jobs.keda-worker.yaml"]
    assert "grant the service get on Secret jobs/prom-token key 'token' (read through the API)" in err
    backends = yaml.safe_load((out / "autoscaler-backends.yaml").read_text())
    token = {"namespace": "jobs", "name": "prom-token", "key": "token"}  # a reference: never the token
    assert backends == {
        "prometheus": {
            "backends": {
                "prometheus-monitoring": {"url": "http://prometheus.monitoring:9090", "bearerTokenSecret": token}
            }
        }
    }
    # merged into the service's settings as the file says, it is what `autoscaler run` reads
    settings = parse_service_settings({"prometheus": {"url": "http://prometheus:9090", **backends["prometheus"]}})
    assert settings.prometheus_backends["prometheus-monitoring"].bearer_token_secret is not None
    # or as a file the service's pod mounts
    assert convert(str(SCALED_OBJECTS), "--output-dir", str(out), "--strict", "--credentials", "file") == 2
    err = capsys.readouterr().err
    assert "mount Secret jobs/prom-token key 'token' at /etc/autoscaler/keda/secret/jobs/prom-token/token" in err
    backends = yaml.safe_load((out / "autoscaler-backends.yaml").read_text())
    assert backends["prometheus"]["backends"]["prometheus-monitoring"]["bearerTokenFile"] == (
        "/etc/autoscaler/keda/secret/jobs/prom-token/token"
    )
    assert convert(str(SCALED_OBJECTS), "--output-dir", str(out)) == 3
    assert sorted(p.name for p in out.iterdir()) == [
        "autoscaler-backends.yaml",
        "jobs.keda-worker.yaml",
        "shop.keda-api.yaml",
    ]
    load_written(tmp_path, yaml.safe_load((out / "jobs.keda-worker.yaml").read_text()))


def test_invalid_objects_exit_2_and_do_not_stop_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump_all(
            [
                {
                    "apiVersion": "autoscaling/v2",
                    "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "x"},
                    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3, "minReplicas": 5},
                },
                {
                    "apiVersion": "keda.sh/v1alpha1",
                    "kind": "ScaledObject",
                    "metadata": {"name": "y", "namespace": "n"},
                    "spec": {
                        "scaleTargetRef": {"name": "y"},
                        "triggers": [{"type": "prometheus", "metadata": {"serverAddress": "http://p", "query": "q"}}],
                    },
                },
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
            ]
        )
    )
    assert convert(str(bad), str(HPAS)) == 2
    captured = capsys.readouterr()
    assert (
        f"{bad}: HorizontalPodAutoscaler default/x: error: spec.maxReplicas: must be greater than or equal to "
        "`minReplicas`"
    ) in captured.err
    assert f"{bad}: ScaledObject n/y: error: spec.triggers[0].metadata.threshold: Required value" in captured.err
    assert f"{bad}: Service s: neither an HPA, a ScaledObject, a (Cluster)TriggerAuthentication, a v1" in captured.err
    # web keeps its cpu metric; its custom metrics, without the adapter's configuration, are warned about
    assert [d["metadata"]["name"] for d in documents(captured.out)] == ["web", "api"]
    assert (
        "HorizontalPodAutoscaler shop/web: warning: not converted: spec.metrics[1]: Pods metric "
        "'http_requests_per_second' not converted: its PromQL is in prometheus-adapter's configuration; pass it "
        "with --adapter-config"
    ) in captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "nothing to convert"),
        (("missing.yaml",), "missing.yaml: cannot read file"),
        (("--compare", str(HPAS)), "--compare needs --from"),
        ((str(HPAS), "--from", "-1d"), "--from and --plot-dir belong to --compare"),
        ((str(HPAS), "--from-cluster", "--adapter-configmap", "adapter"), "write it as NAMESPACE/NAME"),
    ],
)
def test_bad_usage(args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert convert(*args) == 2
    assert message in capsys.readouterr().err


def test_adapter_config_problems_stop_before_converting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "adapter.yaml"
    broken.write_text(
        yaml.safe_dump({"rules": [{"seriesQuery": "x", "metricsQuery": "<<.Series>>", "name": {"matches": "(a)(b)"}}]})
    )
    assert convert(str(HPAS), "--adapter-config", str(broken)) == 2
    assert f"{broken}: rules[0].name.as: must be given" in capsys.readouterr().err
    assert convert(str(HPAS), str(ADAPTER_CONFIG), "--adapter-config", str(ADAPTER_CONFIG)) == 2
    assert "several prometheus-adapter configurations" in capsys.readouterr().err


def test_the_adapters_configmap_is_read_like_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configmap = tmp_path / "cm.yaml"
    configmap.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "adapter-config", "namespace": "monitoring"},
                "data": {"config.yaml": ADAPTER_CONFIG.read_text()},
            }
        )
    )
    assert convert(str(HPAS), str(configmap)) == 0
    from_configmap = capsys.readouterr().out
    assert convert(str(HPAS), "--adapter-config", str(ADAPTER_CONFIG)) == 0
    from_file = capsys.readouterr().out
    body = [line for line in from_file.splitlines() if not line.startswith("#")]
    assert [line for line in from_configmap.splitlines() if not line.startswith("#")] == body


@pytest.mark.prometheus
def test_prometheus_is_asked_which_series_exist(
    series_prometheus: PrometheusSandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fixture's series are from 2023: none had a sample within the last hour.
    assert convert(str(HPAS), "--adapter-config", str(ADAPTER_CONFIG), "--prometheus", series_prometheus.url) == 3
    err = capsys.readouterr().err
    assert (
        "HorizontalPodAutoscaler shop/web: warning: not converted: spec.metrics[1]: Pods metric not converted: "
        "no rule in"
    ) in err and "that Prometheus holds" in err


SCALED_OBJECT_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "scaledobjects.keda.sh"},
    "spec": {
        "group": "keda.sh",
        "scope": "Namespaced",
        "names": {
            "plural": "scaledobjects",
            "singular": "scaledobject",
            "kind": "ScaledObject",
            "listKind": "ScaledObjectList",
            "shortNames": ["so"],
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


TRIGGER_AUTHENTICATION_CRD: dict[str, Any] = {
    **SCALED_OBJECT_CRD,
    "metadata": {"name": "triggerauthentications.keda.sh"},
    "spec": {
        **SCALED_OBJECT_CRD["spec"],
        "names": {
            "plural": "triggerauthentications",
            "singular": "triggerauthentication",
            "kind": "TriggerAuthentication",
            "listKind": "TriggerAuthenticationList",
            "shortNames": ["ta"],
        },
    },
}


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    binary = shutil.which("kubectl")
    assert binary is not None
    result = subprocess.run(
        [binary, "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.kubectl
async def test_from_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with KubeEmulator() as emu:
        emu.install_crd(SCALED_OBJECT_CRD)
        emu.install_crd(TRIGGER_AUTHENTICATION_CRD)  # not ClusterTriggerAuthentication's: its absence is fine
        config = emu.write_kubeconfig(tmp_path / "kubeconfig")
        hpas = [d for d in documents(HPAS.read_text()) if d["apiVersion"] == "autoscaling/v2"]
        hpas[0]["metadata"]["labels"] = {"team": "storefront"}
        keda_made = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "keda-hpa-worker",
                "namespace": "jobs",
                "ownerReferences": [
                    {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": "worker", "uid": "u1"}
                ],
            },
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "worker"}, "maxReplicas": 30},
        }
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "adapter-config",
                "namespace": "monitoring",
                "labels": {"app.kubernetes.io/name": "prometheus-adapter"},
            },
            "data": {"config.yaml": ADAPTER_CONFIG.read_text()},
        }

        def setup() -> None:
            namespaces = [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                for name in ("shop", "jobs", "monitoring")
            ]
            manifests = yaml.safe_dump_all(
                [*namespaces, *hpas, keda_made, configmap, *documents(SCALED_OBJECTS.read_text())]
            )
            kubectl(config, "apply", "--validate=false", "-f", "-", stdin=manifests)

        await asyncio.to_thread(setup)
        code = await asyncio.to_thread(convert, "--from-cluster", "--kubeconfig", str(config))
        captured = capsys.readouterr()
        assert code == 3, captured.err  # shop/api's kafka trigger
        written = documents(captured.out)
        assert sorted((d["metadata"]["namespace"], d["metadata"]["name"]) for d in written) == [
            ("jobs", "worker"),
            ("shop", "api"),
            ("shop", "web"),
        ]
        web = next(d for d in written if d["metadata"]["name"] == "web")
        assert web["spec"]["metrics"][1]["pods"]["query"].startswith("sum(rate(http_requests_total{")
        assert "found prometheus-adapter's ConfigMap monitoring/adapter-config" in captured.err
        assert "HorizontalPodAutoscaler keda-hpa-worker: made by KEDA for a ScaledObject" in captured.err
        # namespace and label filters
        code = await asyncio.to_thread(convert, "--from-cluster", "--kubeconfig", str(config), "-n", "jobs")
        captured = capsys.readouterr()
        assert code == 0, captured.err  # its TriggerAuthentication read from the cluster: nothing lost
        assert [d["metadata"]["name"] for d in documents(captured.out)] == ["worker"]
        assert "#         bearerTokenSecret:\n#           namespace: jobs\n#           name: prom-token" in captured.out
        code = await asyncio.to_thread(convert, "--from-cluster", "--kubeconfig", str(config), "-l", "team=storefront")
        assert code == 0
        assert [d["metadata"]["name"] for d in documents(capsys.readouterr().out)] == ["web"]
        # a configuration given as a file is the one used: the cluster's ConfigMap is not looked for
        code = await asyncio.to_thread(
            convert,
            "--from-cluster",
            "--kubeconfig",
            str(config),
            "-n",
            "shop",
            "--adapter-config",
            str(ADAPTER_CONFIG),
        )
        captured = capsys.readouterr()
        assert code == 3, captured.err  # shop/api's kafka trigger
        assert "found prometheus-adapter's ConfigMap" not in captured.err
        assert sorted(d["metadata"]["name"] for d in documents(captured.out)) == ["api", "web"]


def test_exit_codes_are_the_documented_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/migrating.md's table lists 2, 1, 3 and 0; each but 1 (tests/convert/test_compare.py) is made here."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "migrating.md").read_text()
    table = doc[doc.index("Exit codes, the first that applies") :].split("\n\n")[1]
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == ["**2**", "**1**", "**3**", "**0**"]
    everything = documents(SCALED_OBJECTS.read_text())
    lossless = tmp_path / "worker.yaml"  # the worker and its TriggerAuthentication: nothing lost
    lossless.write_text(yaml.safe_dump_all([d for d in everything if d["metadata"]["name"] != "api"]))
    assert convert(str(lossless), "--strict") == 0
    assert convert(str(SCALED_OBJECTS)) == 3  # the kafka trigger, dropped
    assert "written without what did not convert (see the warnings): exit code 3" in capsys.readouterr().err
    assert convert(str(SCALED_OBJECTS), "--strict") == 2


def test_the_keda_options_defaults_are_the_converters() -> None:
    from autoscaler.cli import build_parser
    from autoscaler.convert.keda_auth import DEFAULT_KEDA_NAMESPACE
    from autoscaler.convert.keda_backends import DEFAULT_MOUNT_DIR

    args = build_parser().parse_args(["convert", "so.yaml"])
    assert (args.secrets_dir, args.keda_namespace) == (DEFAULT_MOUNT_DIR, DEFAULT_KEDA_NAMESPACE)
