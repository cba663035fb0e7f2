"""Every input path, fed mutants of the shipped files and objects: nothing but validation errors.

The seeds are what the project ships: the scenarios (config/scenarios/), the examples
(manifests/examples/), the settings (config/autoscaler.yaml), and ScalingTarget, VPA, Deployment and
Pod objects as the watch caches receive them. Each test drives the function the command line (or the
cache) calls, in-process for speed; tests/parsers/test_cli_exits.py runs the real command for a few.

The allowed outcomes: success, or :class:`SpecError` whose every problem has a path and a message
(the command line prints them and exits 2). Any other exception fails the test, and Hypothesis
reports the input that raised it. ``AUTOSCALER_FUZZ_SCALE=20`` runs twenty times as many cases (each
run different).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from autoscaler.backtest.target import load_target
from autoscaler.cli import main
from autoscaler.cli.explain import explain_status
from autoscaler.cli.run import read_run_inputs
from autoscaler.kube.records import trim_deployment, trim_object, trim_pod
from autoscaler.service.cluster.targets import target_from_object
from autoscaler.service.sync.status import StatusDigest, needs_write
from autoscaler.service.sync.status.restore import restore
from autoscaler.service.sync.view import vpa_for, vpa_observation
from autoscaler.values.fields import SpecError
from autoscaler.values.yaml_files import load_yaml_documents
from tests.parsers.mutations import as_json_bytes, byte_mutants, data_mutants

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "config" / "scenarios").glob("*.yaml"))
EXAMPLES = sorted((ROOT / "manifests" / "examples").glob("*.yaml"))
SETTINGS = ROOT / "config" / "autoscaler.yaml"

SCALE = int(os.environ.get("AUTOSCALER_FUZZ_SCALE", "1"))
SHRINK = os.environ.get("AUTOSCALER_FUZZ_SHRINK") == "1"


def fuzz(examples: int) -> Any:
    """Hypothesis settings for ``examples`` cases (times AUTOSCALER_FUZZ_SCALE; about 3,800 cases and
    25 s in all at 1). Derandomized at scale 1: CI runs the same cases every time, so a failure there
    is a failure here. A failing case is reported as found: shrinking these inputs can take minutes
    (AUTOSCALER_FUZZ_SHRINK=1 shrinks)."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if SHRINK else [])
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        phases=phases,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
            HealthCheck.large_base_example,
        ],
    )


@functools.cache
def seed_bytes(paths: tuple[Path, ...]) -> list[bytes]:
    return [path.read_bytes() for path in paths]


@functools.cache
def seed_documents(paths: tuple[Path, ...]) -> list[Any]:
    """The documents of the files (read once: each mutant starts from a copy)."""
    return [document for path in paths for document in load_yaml_documents(str(path))]


@st.composite
def file_mutants(draw: st.DrawFn, paths: list[Path]) -> bytes:
    """A shipped file edited as bytes, or as data and written back."""
    if draw(st.booleans()):
        return draw(byte_mutants(draw(st.sampled_from(seed_bytes(tuple(paths))))))
    return as_json_bytes(draw(data_mutants(draw(st.sampled_from(seed_documents(tuple(paths)))))))


@pytest.fixture
def write(tmp_path: Path) -> Iterator[Any]:
    counter = iter(range(10**9))

    def write_file(data: bytes) -> str:
        path = tmp_path / f"input-{next(counter)}.yaml"
        path.write_bytes(data)
        return str(path)

    yield write_file


def assert_validation_error(error: SpecError) -> None:
    assert error.errors, "a SpecError without problems"
    for problem in error.errors:
        assert problem.path and problem.message, problem


def run_main(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


# -- files the command line reads -------------------------------------------------------------------


@fuzz(600)
@given(data=st.data())
def test_simulate_answers_any_scenario_with_a_result_or_exit_2(data: st.DataObject, write: Any) -> None:
    """``autoscaler simulate`` in-process: parse, then (when valid) run the engine and print every step."""
    path = write(data.draw(file_mutants(SCENARIOS)))
    code, err = run_main("simulate", path, "--output", "json")
    assert code in (0, 2), err
    if code == 2:
        assert err.startswith(f"{path}: invalid ("), err
        assert "Traceback" not in err


@fuzz(400)
@given(data=st.data())
def test_run_answers_any_settings_with_settings_or_a_validation_error(data: st.DataObject, write: Any) -> None:
    path = write(data.draw(file_mutants([SETTINGS])))
    try:
        read_run_inputs(path, {})
    except SpecError as exc:
        assert_validation_error(exc)


@fuzz(500)
@given(data=st.data())
def test_run_answers_any_targets_file_with_targets_or_a_validation_error(data: st.DataObject, write: Any) -> None:
    """A targets file (standalone mode): invalid targets carry their problems, the file's own problems raise."""
    path = write(data.draw(file_mutants(EXAMPLES)))
    try:
        _, targets = read_run_inputs(None, {("prometheus", "url"): "http://127.0.0.1:9", ("targets",): path})
    except SpecError as exc:
        assert_validation_error(exc)
        return
    for target in targets or []:
        assert target.valid or target.errors
        for problem in target.errors:
            assert problem.path.startswith(("spec", "status", "metadata")) and problem.message, problem


@fuzz(400)
@given(data=st.data())
def test_backtest_answers_any_target_file_with_a_target_or_a_validation_error(data: st.DataObject, write: Any) -> None:
    path = write(data.draw(file_mutants(EXAMPLES)))
    try:
        load_target(path)
    except SpecError as exc:
        assert_validation_error(exc)


# -- objects the watch caches receive -----------------------------------------------------------------

STATUS: dict[str, Any] = {
    "observedGeneration": 3,
    "currentReplicas": 4,
    "desiredReplicas": 5,
    "lastScaleTime": "2026-01-01T00:00:00Z",
    "conditions": [
        {
            "type": "AbleToScale",
            "status": "True",
            "reason": "SucceededRescale",
            "message": "ok",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
        {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound", "message": "ok"},
    ],
    "history": {
        "recommendations": [
            {"replicas": 5, "at": "2026-01-01T00:00:15Z", "ongoing": True},
            {"replicas": 4, "at": "2026-01-01T00:00:00Z"},
        ],
        "scaleUpEvents": [{"change": 1, "at": "2026-01-01T00:00:00Z", "outdated": False}],
        "scaleDownEvents": [],
    },
    "lastDecision": {
        "time": "2026-01-01T00:00:15Z",
        "scaled": True,
        "currentReplicas": 4,
        "replicas": 5,
        "proposal": 5,
        "limitedBy": None,
        "error": None,
        "explanation": ["Current replicas: 4."],
    },
    "currentMetrics": [
        {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"averageValue": "12"}}}
    ],
    "hvpa": {
        "explanation": ["pinned"],
        "state": {"pins": {"server": {"cpu": "500m", "memory": "1Gi"}}, "lastApplied": "2026-01-01T00:00:00.000000Z"},
    },
}


@functools.cache
def cluster_targets() -> list[dict[str, Any]]:
    """The examples as the API server returns them: with a namespace, a uid, a generation and a status."""
    return [
        {
            **document,
            "status": STATUS,
            "metadata": {
                **document["metadata"],
                "namespace": "shop",
                "uid": "u-1",
                "generation": 3,
                "resourceVersion": "12",
            },
        }
        for document in seed_documents(tuple(EXAMPLES))
    ]


@fuzz(1000)
@given(data=st.data())
def test_a_target_object_from_the_api_makes_only_that_target_invalid(data: st.DataObject) -> None:
    """target_from_object never raises; what reads a target's status afterwards never raises either."""
    obj = data.draw(data_mutants(data.draw(st.sampled_from(cluster_targets()))))
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return  # the API server always sends an object with metadata (and the watch cache reads it first)
    target = target_from_object(obj)
    assert target.valid or target.errors
    for problem in target.errors:
        assert problem.path.startswith(("spec", "status", "metadata")) and problem.message, problem
    status = target.status
    restore(status, time.time())  # HVPA's state (status.hvpa.state) with the rest
    needs_write(status, STATUS)
    needs_write(STATUS, status)
    if isinstance(status, dict):
        explain_status(target.namespace, target.name, status)
    StatusDigest.of_status(status)


VPA: dict[str, Any] = {
    "apiVersion": "autoscaling.k8s.io/v1",
    "kind": "VerticalPodAutoscaler",
    "metadata": {"name": "api-server", "namespace": "shop", "resourceVersion": "7"},
    "spec": {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api-server"},
        "updatePolicy": {"updateMode": "Auto"},
        "resourcePolicy": {"containerPolicies": [{"containerName": "server", "minAllowed": {"cpu": "100m"}}]},
    },
    "status": {
        "conditions": [
            {"type": "RecommendationProvided", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ],
        "recommendation": {
            "containerRecommendations": [
                {
                    "containerName": "server",
                    "target": {"cpu": "500m", "memory": "1Gi"},
                    "uncappedTarget": {"cpu": "600m", "memory": "1Gi"},
                    "lowerBound": {"cpu": "100m"},
                    "upperBound": {"cpu": "2"},
                }
            ]
        },
    },
}
POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}, "deletionTimestamp": None},
    "spec": {
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
        "initContainers": [{"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}}],
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"}],
    },
}
DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "web", "namespace": "shop", "uid": "d-1", "resourceVersion": "9"},
    "spec": {
        "replicas": 3,
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}],
        },
        "template": {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}]}},
    },
    "status": {"replicas": 3},
}


@fuzz(500)
@given(data=st.data())
def test_vpa_pod_and_deployment_objects_are_trimmed_without_raising(data: st.DataObject) -> None:
    """The other caches: a record or None, never an exception (a VPA's status is read leniently)."""
    kind, seed = data.draw(st.sampled_from([("vpa", VPA), ("pod", POD), ("deployment", DEPLOYMENT)]))
    obj = data.draw(data_mutants(seed))
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return
    if kind == "pod":
        trim_pod(obj)
    elif kind == "deployment":
        trim_deployment(obj)
    else:
        record = trim_object(obj)
        if record is not None:
            vpa_observation(record)
            spec = next(t.spec for t in map(target_from_object, cluster_targets()) if t.spec and t.spec.hvpa)
            vpa_for([record], "shop", spec)


# -- arguments ------------------------------------------------------------------------------------------

ARGUMENT_TEXT = st.one_of(
    st.sampled_from(
        [
            "now",
            "-2h",
            "now-1d12h",
            "2024-05-07",
            "2024-05-07T09:00:00Z",
            "1715072400",
            "15s",
            "0",
            "nan",
            "inf",
            "-inf",
            "1e400",
            "9" * 400,
            "9" * 5000,
            "-" + "9" * 5000 + "d",
            "now+" + "9" * 30 + "w",
            "0.0001",
            "1e-400",
            "",
            " ",
            "-",
            "now-",
            "5m30s",
            "99999999999999999999ms",
        ]
    ),
    st.text(alphabet="0123456789.-+nowsmhdyeEZT:", max_size=30),
)


@fuzz(200)
@given(
    option=st.sampled_from(["--from", "--to", "--step", "--chunk", "--pod-startup", "--timeout", "--initial-replicas"]),
    value=ARGUMENT_TEXT,
)
def test_backtest_options_are_validated_before_anything_is_read(option: str, value: str, write: Any) -> None:
    """Every time, duration and number on the backtest command line: exit 2 with a message, or on to
    Prometheus (which is not there: exit 1, a clear message)."""
    target = str(EXAMPLES[-1])
    args = ["backtest", target, "--prometheus", "http://127.0.0.1:9", "--no-progress", "--timeout", "2"]
    args += ["--from", "-1h"] if option != "--from" else []
    with contextlib.suppress(SystemExit):  # argparse refusing a value: its own message, exit 2
        code, err = run_main(*args, f"{option}={value}")
        assert code in (1, 2), err
        assert err.startswith("autoscaler backtest: "), err


@fuzz(200)
@given(value=ARGUMENT_TEXT)
def test_demo_duration_is_validated(value: str) -> None:
    from autoscaler.cli.demo import parse_demo_duration

    try:
        seconds = parse_demo_duration(value)
    except ValueError as exc:
        assert str(exc).startswith("--duration")
    else:
        assert 0 < seconds < float("inf")
