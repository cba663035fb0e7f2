"""``autoscaler demo`` in accelerated time: the real service scales the sandbox's Deployment up through
the rise and the spike and back down after the fall, and the timeline and summary say so."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autoscaler.cli import main
from autoscaler_sandbox import demo_objects as objects
from autoscaler_sandbox.demo_run import DemoOptions, run_demo
from autoscaler_sandbox.loadcurve import DEMO_CURVE
from autoscaler_sandbox.prometheus import find_binary

RISE_STARTS = 60.0  # demo seconds: the curve's calm phase ends
FALL_STARTS = 390.0  # the spike ends
ONE_SYNC = 15.0


async def test_the_demo_scales_up_on_the_rise_and_spike_and_back_down_after_the_fall() -> None:
    handlers = list(logging.getLogger().handlers)
    out = io.StringIO()
    # 60× and 15 demo minutes: about 16 s of wall time; the last 3 minutes leave the scale-down room.
    summary = await run_demo(DemoOptions(speed=60, duration=900), out)
    text = out.getvalue()

    assert not summary.interrupted and summary.errors == 0
    assert summary.start_replicas == objects.INITIAL_REPLICAS
    ups = [c for c in summary.changes if c.new > c.old]
    downs = [c for c in summary.changes if c.new < c.old]
    # up while the load rises and spikes, never before it rises
    assert ups and all(RISE_STARTS < c.at < FALL_STARTS + ONE_SYNC for c in ups), summary.changes
    assert summary.peak is not None and summary.peak[0] == objects.MAX_REPLICAS
    # down only once the load falls, back to the minimum
    assert downs and all(c.at > FALL_STARTS for c in downs), summary.changes
    assert summary.final_replicas == objects.MIN_REPLICAS
    # the behavior shows: the spike is rate-limited and/or capped (which one lasts depends on where the
    # syncs fall on the curve), the fall is held by the stabilization window
    assert {"ScaleUpLimit", "TooManyReplicas"} & set(summary.limited), summary.limited
    assert "ScaleDownStabilized" in summary.limited, summary.limited
    assert summary.pods_started >= objects.MAX_REPLICAS - objects.INITIAL_REPLICAS
    assert 0 < summary.ready_pod_seconds < summary.pod_seconds < objects.MAX_REPLICAS * summary.demo_seconds

    # the timeline: a line per scale, with the service's reasons, then the summary
    assert text.count("▲") == len(ups) and text.count("▼") == len(downs)
    assert "cpu resource utilization (percentage of request) above target" in text
    assert "All metrics below target" in text
    assert "held by ScaleDownStabilized" in text or "limited by ScaleDownStabilized" in text
    # the whole 15 minutes ran (a loaded machine may end a demo second or two past the curve)
    assert re.search(r"Summary: ran 15:0\d of demo time", text), text.splitlines()[-8:]
    assert summary.lines[0] in text

    # everything it started has stopped, and logging is as it was
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert logging.getLogger().handlers == handlers


@pytest.mark.prometheus
async def test_the_demo_reads_a_real_prometheus() -> None:
    out = io.StringIO()
    summary = await run_demo(DemoOptions(speed=60, duration=360, prometheus="binary"), out)
    assert "prometheus" in out.getvalue().splitlines()[2]
    assert summary.errors == 0 and summary.decisions > 0
    assert summary.peak is not None and summary.peak[0] > objects.INITIAL_REPLICAS  # scrapes lag, but it rises
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_an_interrupt_ends_it_early_with_the_summary() -> None:
    out = io.StringIO()
    interrupt = asyncio.Event()
    asyncio.get_running_loop().call_later(1.0, interrupt.set)
    summary = await run_demo(DemoOptions(speed=60, quiet=True), out, interrupt=interrupt)
    assert summary.interrupted and summary.demo_seconds < DEMO_CURVE.duration
    # quiet: the summary only
    assert out.getvalue().lstrip().startswith("Summary: interrupted after")
    assert asyncio.all_tasks() == {asyncio.current_task()}


@pytest.mark.kubectl
async def test_a_person_changes_the_target_with_kubectl_while_the_sandbox_keeps_running(tmp_path: Path) -> None:
    out = io.StringIO()
    interrupt = asyncio.Event()
    kubeconfig = tmp_path / "demo.kubeconfig"
    demo = asyncio.create_task(
        run_demo(
            DemoOptions(speed=60, duration=30, keep_running=True, kubeconfig=str(kubeconfig)), out, interrupt=interrupt
        )
    )
    try:
        await _until(lambda: "demo time is up" in out.getvalue(), demo)
        assert f"KUBECONFIG={kubeconfig} kubectl get st -w" in out.getvalue()
        listed = await _kubectl(kubeconfig, "get", "st")
        assert listed.split()[:6] == ["NAME", "TARGET", "MIN", "MAX", "CURRENT", "DESIRED"]
        # Both bounds raised above any count the load could have reached before the patch (the sandbox keeps
        # scaling while kubectl runs, as far as maxReplicas on a loaded machine): whenever the patch lands, the
        # service finds the Deployment below the new minimum and scales it straight to it, for that reason only.
        floor = objects.MAX_REPLICAS + 1
        bounds = json.dumps({"spec": {"minReplicas": floor, "maxReplicas": floor + 2}})
        await _kubectl(kubeconfig, "patch", "st", "web", "--type=merge", "-p", bounds)
        await _until(lambda: f"→ {floor}  " in out.getvalue(), demo)
    finally:
        interrupt.set()
        summary = await asyncio.wait_for(demo, 60)
    raised = next(line for line in out.getvalue().splitlines() if f"→ {floor}  " in line)
    assert raised.startswith("▲") and "Current number of replicas below Spec.MinReplicas" in raised, raised
    assert summary.interrupted and summary.demo_seconds > 30
    assert summary.peak is not None and summary.peak[0] >= floor
    assert summary.final_replicas is not None and floor <= summary.final_replicas <= floor + 2


async def _until(condition: Callable[[], bool], demo: asyncio.Task[Any]) -> None:
    async with asyncio.timeout(60):
        while not condition():
            assert not demo.done(), demo
            await asyncio.sleep(0.2)


async def _kubectl(kubeconfig: Path, *args: str) -> str:
    binary = find_binary("kubectl")
    assert binary is not None
    process = await asyncio.create_subprocess_exec(
        binary,
        "--kubeconfig",
        str(kubeconfig),
        "--cache-dir",
        str(kubeconfig.parent / f"cache-{args[0]}"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.parametrize(
    "argv", [["demo", "--speed", "7"], ["demo", "--duration", "soon"], ["demo", "--duration", "0"]]
)
def test_bad_options_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        code = int(exit_.code or 0)
    assert code == 2
    assert argv[1] in capsys.readouterr().err  # the message names the option
