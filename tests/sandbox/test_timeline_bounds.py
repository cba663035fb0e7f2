"""The demo's timeline names the bounds a target has now: after ``kubectl patch`` of minReplicas or
maxReplicas while the demo runs, "held by TooManyReplicas" shows the new maxReplicas, not the one the
demo created the target with."""

from __future__ import annotations

import io
from types import SimpleNamespace

from autoscaler_sandbox import demo_objects as objects
from autoscaler_sandbox.loadcurve import DEMO_CURVE
from autoscaler_sandbox.timeline import Timeline
from autoscaler_sandbox.timescale import TimeScale


def _timeline(out: io.StringIO) -> Timeline:
    scale = TimeScale(60)
    scale.start()
    world = SimpleNamespace(curve=DEMO_CURVE, utilization=lambda load: 90.0)
    recorder = SimpleNamespace(ready=4, pods=[1, 2, 3, 4], replicas=4)
    return Timeline(out, scale, world, recorder, limits=objects.LIMIT_MEANINGS)  # type: ignore[arg-type]


def _held(replicas: int, proposal: int, limited: str) -> dict[str, object]:
    return {
        "current_replicas": replicas,
        "replicas": replicas,
        "proposal": proposal,
        "applied": False,
        "limited_by": limited,
    }


def test_a_patched_maximum_is_the_one_printed() -> None:
    out = io.StringIO()
    timeline = _timeline(out)
    created = objects.MAX_REPLICAS
    timeline.on_decision(_held(created, created + 5, "TooManyReplicas"))
    patched = created - 3  # kubectl patch st web --type merge -p '{"spec":{"maxReplicas":…}}'
    timeline.on_decision(
        {
            "current_replicas": created,
            "replicas": patched,
            "proposal": created + 5,
            "applied": True,
            "reason": "All metrics below target",
            "limited_by": "TooManyReplicas",
        }
    )
    timeline.on_decision(_held(patched, created + 5, "TooManyReplicas"))
    lines = out.getvalue().splitlines()
    assert f"held by TooManyReplicas (maxReplicas {created}), proposal {created + 5}" in lines[0]
    assert lines[1].endswith(f"limited by TooManyReplicas (maxReplicas {patched}), proposal {created + 5}")
    assert len(lines) == 2  # held at the same bound: nothing new to say
    timeline.heartbeat = 0.0
    timeline.tick()
    assert (
        out.getvalue()
        .splitlines()[-1]
        .endswith(f"held by TooManyReplicas (maxReplicas {patched}), proposal {created + 5}")
    )


def test_a_patched_minimum_held_without_a_scale_is_said_again() -> None:
    out = io.StringIO()
    timeline = _timeline(out)
    timeline.on_decision(_held(objects.MIN_REPLICAS, 1, "TooFewReplicas"))
    timeline.on_decision(_held(objects.MIN_REPLICAS + 3, 1, "TooFewReplicas"))  # raised, and scaled by someone
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(f"held by TooFewReplicas (minReplicas {objects.MIN_REPLICAS}), proposal 1")
    assert lines[1].endswith(f"held by TooFewReplicas (minReplicas {objects.MIN_REPLICAS + 3}), proposal 1")
