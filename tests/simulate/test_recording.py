"""Recordings of ``autoscaler run --record``: every observation a sync can make survives the scenario
format exactly, and a recorded run converts to a scenario whose replay decides what the run decided.
(The live proof, a real service against the emulator and a real Prometheus, is tests/e2e/test_replay_e2e.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.cli import main
from autoscaler.core.decision import TargetState
from autoscaler.core.observation import (
    ConditionStatus,
    ContainerInfo,
    ExternalReading,
    MetricFailure,
    MetricReading,
    ObjectReading,
    Observation,
    PodInfo,
    PodPhase,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
    ScaleInfo,
    SelectorProblem,
)
from autoscaler.core.pause_spec import pause_annotation_items
from autoscaler.core.settings import ControllerSettings, Tolerances
from autoscaler.core.spec_parse import parse_target_spec
from autoscaler.core.sync import ALL_WRITTEN, NOTHING_WRITTEN, SyncInputs, SyncState, WriteResults, plan_sync, settle
from autoscaler.simulate.output import step_json
from autoscaler.simulate.recording import RecordingError, read_lines, scenario_from_recording, step_document, sync_line
from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import observation_for, parse_scenario
from autoscaler.values.yaml_files import dump_yaml, parse_yaml_text

T0 = 1_764_000_000.123456
SPEC: dict[str, Any] = {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "minReplicas": 1,
    "maxReplicas": 30,
    "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "memory",
                "container": "app",
                "target": {"type": "AverageValue", "averageValue": "1Gi"},
            },
        },
        {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
        {
            "type": "Object",
            "object": {
                "metric": {"name": "hits"},
                "describedObject": {"kind": "Service", "name": "web"},
                "target": {"type": "Value", "value": "100"},
            },
        },
        {
            "type": "External",
            "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "5"}},
        },
    ],
}
PARSED = parse_target_spec(SPEC, "spec", require_queries=False)

times = st.floats(T0 - 5e6, T0 + 5e6, allow_nan=False)
offsets = st.floats(-1e5, 10.0, allow_nan=False)
milli = st.integers(0, 10**12)
names = st.text("abcdefgh-0123456789", min_size=1, max_size=8)


@st.composite
def pods(draw: st.DrawFn, at: float) -> list[PodInfo]:
    result = []
    for name in draw(st.lists(names, unique=True, max_size=4)):
        containers = tuple(
            ContainerInfo(
                c,
                draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), milli)),
                draw(st.booleans()),
                draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), milli)),
            )
            for c in draw(st.lists(st.sampled_from(["app", "proxy", "log"]), unique=True, max_size=3))
        )
        result.append(
            PodInfo(
                name,
                draw(st.sampled_from(list(PodPhase))),
                draw(st.sampled_from([*ConditionStatus, None])),
                draw(st.one_of(st.none(), offsets.map(lambda o: at + o))),
                draw(st.one_of(st.none(), offsets.map(lambda o: at + o))),
                draw(st.booleans()),
                containers,
                draw(st.one_of(st.none(), st.dictionaries(st.just("cpu"), milli, min_size=1))),
            )
        )
    return result


@st.composite
def readings(draw: st.DrawFn, at: float, pod_names: list[str]) -> list[MetricReading]:
    def when() -> float:
        return at + draw(offsets)

    def failed() -> MetricReading | None:
        return MetricFailure(draw(st.text(max_size=30))) if draw(st.booleans()) else None

    usage = ResourceReading(
        {
            p: PodUsage(
                draw(st.dictionaries(st.sampled_from(["app", "proxy"]), st.one_of(st.none(), milli))),
                when(),
                draw(st.floats(0, 600)),
            )
            for p in pod_names
        }
    )
    memory = ResourceReading({p: PodUsage({"app": draw(milli)}, when()) for p in pod_names})
    rps = PodsReading({p: Sample(draw(milli), when(), draw(st.floats(0, 600))) for p in pod_names})
    hits = ObjectReading(draw(st.integers(-(10**12), 10**12)), when())
    queue = ExternalReading(tuple(draw(st.lists(st.integers(-(10**12), 10**12), max_size=3))), when())
    return [failed() or reading for reading in (usage, memory, rps, hits, queue)]


@st.composite
def observations(draw: st.DrawFn) -> tuple[float, Observation]:
    at = draw(times)
    infos = draw(pods(at))
    problem = draw(
        st.one_of(
            st.none(),
            st.builds(SelectorProblem, st.sampled_from(["InvalidSelector", "AmbiguousSelector"]), st.text(max_size=40)),
        )
    )
    scale = ScaleInfo(
        draw(st.integers(0, 2**31 - 1)),
        draw(st.integers(0, 2**31 - 1)),
        draw(st.sampled_from(["", "app=web", "app in (web, api),tier!=db"])),
    )
    return at, Observation(scale, infos, draw(readings(at, [p.name for p in infos])), problem)


def through_yaml(document: Any) -> Any:
    """As the converter writes a scenario and ``autoscaler simulate`` reads it back."""
    return parse_yaml_text(dump_yaml(document), "scenario.yaml")


@settings(max_examples=300, deadline=None)
@given(observed=observations())
def test_every_observation_survives_the_scenario_format(observed: tuple[float, Observation]) -> None:
    at, observation = observed
    step = through_yaml(step_document(observation, at))
    scenario = parse_scenario({"spec": SPEC, "steps": [step]})
    replayed = observation_for(scenario, scenario.steps[0], step["replicas"])
    assert replayed.scale == observation.scale
    assert replayed.selector_problem == observation.selector_problem
    assert tuple(replayed.pods) == tuple(observation.pods)
    assert tuple(replayed.readings) == tuple(observation.readings)


def test_the_observed_keys_are_checked_with_their_paths() -> None:
    step = {
        "at": 0,
        "replicas": 2,
        "selector": None,
        "selectorProblem": {"reason": "Other"},
        "readings": [
            {"failed": "x"},
            {"usage": {"a": {"containers": {"app": "lots"}}}},
            {"pods": {"a": {"at": 1}}},
            {"value": "1", "extra": 1},
        ],
        "objects": {"hits": "1"},
        "pods": [{"name": "a", "metrics": {"rps": "1"}, "containers": [{"name": "app", "usage": {"cpu": "1"}}]}],
    }
    with pytest.raises(Exception) as caught:
        parse_scenario({"spec": SPEC, "steps": [step]})
    problems = {e.path: e.message for e in caught.value.errors}  # type: ignore[attr-defined]
    assert problems["steps[0].selector"] == 'must be a string ("" for none)'
    assert problems["steps[0].selectorProblem.reason"].startswith('Unsupported value: "Other"')
    assert problems["steps[0].selectorProblem.message"] == "Required value"
    assert problems["steps[0].readings"] == "must have one entry per spec metric (5), not 4"
    assert (
        problems["steps[0].objects"]
        == problems["steps[0].pods[0].metrics"]
        == ("Forbidden: the step gives its readings")
    )
    assert problems["steps[0].pods[0].containers[0].usage"] == "Forbidden: the step gives its readings"
    step["readings"] = [
        {"usage": {"a": {"containers": {"app": "lots"}}}},
        {"failed": "x"},
        {"pods": {"a": {"at": 1}}},
        {"value": "1", "extra": 1},
        {"values": ["1"], "at": "soon"},
    ]
    with pytest.raises(Exception) as caught:
        parse_scenario({"spec": SPEC, "steps": [step]})
    problems = {e.path: e.message for e in caught.value.errors}  # type: ignore[attr-defined]
    assert "steps[0].readings[0].usage.a.containers.app" in problems
    assert problems["steps[0].readings[2].pods.a.value"] == "Required value"
    assert problems["steps[0].readings[3].extra"] == "unknown field"
    assert problems["steps[0].readings[4].at"] == "must be a number, not string"


def test_the_status_before_the_first_step() -> None:
    scenario = parse_scenario(
        {
            "spec": SPEC,
            "status": {"desiredReplicas": 4, "lastScaleTime": -30},
            "steps": [{"at": 0, "replicas": 4, "pods": [{"name": "a", "readySince": None}]}],
        }
    )
    assert (scenario.desired_replicas, scenario.last_scale_time) == (4, -30)
    assert scenario.steps[0].pods[0].info.ready_since is None
    assert run_scenario(scenario)[0].decision.previous_desired_replicas == 4


QUEUE_SPEC: dict[str, Any] = {
    **SPEC,
    "metrics": [SPEC["metrics"][4]],
    "behavior": {
        "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
        "scaleDown": {"stabilizationWindowSeconds": 60},
    },
}
QUEUE_SETTINGS = ControllerSettings(Tolerances(0.05, 0.2), 120.0, 15.0, 45.0)


def recorded_run(loads: list[int], *, results: WriteResults = ALL_WRITTEN) -> list[dict[str, Any]]:
    """The lines a service would have recorded for ``QUEUE_SPEC`` under these queue lengths, a sync every
    15 s, its scale following each decision."""
    spec = parse_target_spec(QUEUE_SPEC, "spec", require_queries=False)
    state, replicas, lines = SyncState(TargetState()), 2, []
    for index, load in enumerate(loads):
        now = T0 + 15 * index
        observation = Observation(
            ScaleInfo(replicas, replicas, "app=web"), [], [ExternalReading((load * 1000,), now - 3.25)]
        )
        plan = plan_sync(spec, SyncInputs(observation), state, QUEUE_SETTINGS, now)
        outcome = settle(plan, results)
        lines.append(
            json.loads(
                json.dumps(sync_line("shop/web", QUEUE_SPEC, QUEUE_SETTINGS, plan, observation, results, outcome))
            )
        )
        state, replicas = outcome.state, outcome.decision.replicas
    return lines


def test_a_recorded_run_replays_to_the_same_decisions() -> None:
    lines = recorded_run([10, 40, 80, 80, 20, 20, 20, 20, 20, 5, 5, 5, 5, 5, 5])
    assert {line["decision"]["limitedBy"] for line in lines} >= {"ScaleUpLimit", "ScaleDownStabilized"}
    scenario = parse_scenario(through_yaml(scenario_from_recording(lines, "shop/web")))
    steps = [step_json(result) for result in run_scenario(scenario)]
    assert len(steps) == len(lines)
    for step, line in zip(steps, lines, strict=True):
        decided = line["decision"]
        assert {key: step[key] for key in decided} == decided


def test_what_cannot_be_replayed_is_said() -> None:
    lines = recorded_run([10, 40, 80])
    with pytest.raises(RecordingError, match=r"has no sync of shop/api \(it has: shop/web\)"):
        scenario_from_recording(lines, "shop/api")
    with pytest.raises(RecordingError, match="the service ran with --dry-run"):
        scenario_from_recording(recorded_run([10, 40, 80], results=NOTHING_WRITTEN), "shop/web")
    failed = recorded_run([10, 40, 80], results=WriteResults(scale=False, scale_error="boom", vpa=False))
    with pytest.raises(RecordingError, match="the write failed: boom"):
        scenario_from_recording(failed, "shop/web")
    with pytest.raises(RecordingError, match="did not start from the state the sync before it left"):
        scenario_from_recording([lines[0], lines[2]], "shop/web")
    changed = [lines[0], {**lines[1], "spec": {**QUEUE_SPEC, "maxReplicas": 3}}]
    with pytest.raises(RecordingError, match="the spec or the settings changed"):
        scenario_from_recording(changed, "shop/web")
    hvpa = [{**lines[0], "spec": {**QUEUE_SPEC, "hvpa": {}}}]
    with pytest.raises(RecordingError, match="has an hvpa section"):
        scenario_from_recording(hvpa, "shop/web")


def test_a_line_cut_short_at_the_end_is_left_out() -> None:
    text = "\n".join(json.dumps(line) for line in recorded_run([10, 40])) + '\n{"target": "shop/w'
    assert len(read_lines(text, "r.jsonl")) == 2
    with pytest.raises(RecordingError, match=r"r\.jsonl:1: not a JSON line"):
        read_lines("{oops\n{}", "r.jsonl")


def test_the_scenario_command_writes_a_replayable_scenario_and_says_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = tmp_path / "run.jsonl"
    recording.write_text("".join(json.dumps(line) + "\n" for line in recorded_run([10, 40, 80, 20])))
    written = tmp_path / "replay.yaml"
    assert main(["scenario", "--from-recording", str(recording), "--target", "shop/web", "-o", str(written)]) == 0
    text = written.read_text()
    assert text.startswith(f"# shop/web: 4 syncs recorded by autoscaler run --record ({recording})\n")
    assert len(run_scenario(parse_scenario(parse_yaml_text(text, "replay.yaml")))) == 4
    assert main(["scenario", "--from-recording", str(recording), "--target", "shop/web"]) == 0
    assert capsys.readouterr().out == text

    assert main(["scenario", "--from-recording", str(recording), "--target", "shop/api"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"autoscaler scenario: {recording}: the recording has no sync of shop/api (it has: shop/web)"
    )
    missing = tmp_path / "missing.jsonl"
    assert main(["scenario", "--from-recording", str(missing), "--target", "shop/web"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"autoscaler scenario: {missing}: cannot read it: No such file or directory"
    )
    unwritable = tmp_path / "no-such-directory" / "replay.yaml"
    assert main(["scenario", "--from-recording", str(recording), "--target", "shop/web", "-o", str(unwritable)]) == 1
    assert "cannot write it: No such file or directory" in capsys.readouterr().err


def paused_run(loads: list[int], annotations: list[dict[str, str]]) -> list[dict[str, Any]]:
    """``recorded_run`` for a target whose pause annotations change from sync to sync."""
    spec = parse_target_spec(QUEUE_SPEC, "spec", require_queries=False)
    state, replicas, lines = SyncState(TargetState()), 2, []
    for index, (load, annotated) in enumerate(zip(loads, annotations, strict=True)):
        now = T0 + 15 * index
        observation = Observation(
            ScaleInfo(replicas, replicas, "app=web"), [], [ExternalReading((load * 1000,), now - 3.25)]
        )
        items = pause_annotation_items(annotated)
        plan = plan_sync(spec, SyncInputs(observation, annotations=items), state, QUEUE_SETTINGS, now)
        outcome = settle(plan, ALL_WRITTEN)
        line = sync_line("shop/web", QUEUE_SPEC, QUEUE_SETTINGS, plan, observation, ALL_WRITTEN, outcome, items)
        lines.append(json.loads(json.dumps(line)))
        state, replicas = outcome.state, outcome.decision.replicas
    return lines


def test_a_paused_run_replays_to_the_same_decisions() -> None:
    """The step's annotations and the state's pause are recorded: a replay from the first sync, or from one in
    the middle of a pause at a count (status.pause: reached, since), decides what the run decided."""
    at_one, scale_in = {"autoscaler.dev/paused-replicas": "1"}, {"autoscaler.dev/paused-scale-in": "true"}
    annotations = [{}, at_one, at_one, at_one, {}, *[scale_in] * 5, {}]
    lines = paused_run([40, 40, 80, 80, 80, 5, 5, 5, 5, 5, 5], annotations)
    # At 1 until resumed; then up by the policy (the pause's 4 -> 1 counts in its period); the scale-down the
    # window allows at 120 s is held by the scale-in pause until it is lifted.
    assert [line["decision"]["replicas"] for line in lines] == [4, 1, 1, 1, 6, 6, 6, 6, 6, 6, 1]
    held = lines[8]["decision"]  # nothing else held it: no window, no limit
    assert (held["desiredReplicas"], held["limitedBy"], held["conditions"][-1]["reason"]) == (1, None, "PausedScaleIn")
    assert lines[2]["state"]["pause"] == {"mode": "replicas", "since": T0 + 15, "replicas": 1, "reached": True}
    for start in (0, 2):
        scenario = parse_scenario(through_yaml(scenario_from_recording(lines[start:], "shop/web")))
        steps = [step_json(result) for result in run_scenario(scenario)]
        for step, line in zip(steps, lines[start:], strict=True):
            decided = line["decision"]
            assert {key: step[key] for key in decided} == decided
