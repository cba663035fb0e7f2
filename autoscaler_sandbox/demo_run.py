"""One run of ``autoscaler demo``: the sandbox up, the service started against it, the load curve
played, the timeline printed, and everything stopped again (``autoscaler/cli/demo.py`` is the
command line around it)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from autoscaler.service.app import SHUTDOWN_SECONDS, Service
from autoscaler.service.settings import LoggingSettings
from autoscaler.service.telemetry.logs import configure_logging
from autoscaler_sandbox import demo_config as config
from autoscaler_sandbox import demo_objects as objects
from autoscaler_sandbox.loadcurve import DEMO_CURVE, LoadCurve
from autoscaler_sandbox.prometheus import SandboxError
from autoscaler_sandbox.recorder import ClusterRecorder
from autoscaler_sandbox.sources import metrics_source
from autoscaler_sandbox.timeline import DecisionTap, Summary, Timeline
from autoscaler_sandbox.timescale import TimeScale, clock_text
from autoscaler_sandbox.world import DemoWorld
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController

READY_TIMEOUT = 30.0  # wall seconds for the service to start and sync its caches
TICK = 5.0  # demo seconds between two looks at the heartbeat


class DemoError(RuntimeError):
    """The demo could not run (the message says why); exit code 1."""


@dataclass(frozen=True)
class DemoOptions:
    speed: int = 10
    duration: float | None = None  # demo seconds; None: the whole load curve
    quiet: bool = False
    prometheus: str = "builtin"  # builtin or binary (the command line resolves auto)
    kubeconfig: str | None = None  # where kubectl's kubeconfig goes (None: the demo's temporary directory)
    keep_running: bool = False  # after the curve, run on until interrupted (the load stays at its end)


async def run_demo(
    options: DemoOptions, out: TextIO, *, interrupt: asyncio.Event | None = None, log: TextIO | None = None
) -> Summary:
    """Run the demo to the end of its curve (or ``options.duration``, or ``interrupt``), printing the
    timeline to ``out``; return the summary. Everything it starts is stopped before it returns."""
    interrupt = interrupt or asyncio.Event()
    scale = TimeScale(options.speed)
    duration = options.duration if options.duration is not None else DEMO_CURVE.duration
    started = time.monotonic()
    workdir = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="autoscaler-demo-"))
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(asyncio.to_thread, _remove_tree, workdir)
        emulator = KubeEmulator()
        await emulator.start()
        stack.push_async_callback(emulator.stop)
        recorder = await _sandbox(emulator, scale)
        stack.callback(recorder.detach)
        world = DemoWorld(DEMO_CURVE, scale, objects.WEB, recorder.pod_states)
        try:
            source = await stack.enter_async_context(
                metrics_source(options.prometheus, world, scale.wall(config.CPU_RATE_WINDOW))
            )
        except SandboxError as exc:
            raise DemoError(f"the metrics source did not start: {exc}") from None
        kubeconfig = await asyncio.to_thread(emulator.write_kubeconfig, workdir / "kubeconfig")
        # For a person's kubectl: the target's namespace is the context's, so "kubectl get st -w" shows it.
        user_kubeconfig = Path(options.kubeconfig) if options.kubeconfig else workdir / "kubectl.kubeconfig"
        try:
            await asyncio.to_thread(emulator.write_kubeconfig, user_kubeconfig, namespace=objects.NAMESPACE)
        except OSError as exc:
            raise DemoError(f"--kubeconfig: {exc}") from None
        service = Service(
            config.service_settings(scale, source.url, source.rate_window, str(kubeconfig)), identity="autoscaler-demo"
        )
        timeline = Timeline(
            out, scale, world, recorder, limits=objects.LIMIT_MEANINGS, quiet=options.quiet, heartbeat=config.HEARTBEAT
        )
        tap = DecisionTap(objects.NAMESPACE, objects.WEB.name, timeline.on_decision)
        stack.enter_context(_service_logging(tap, log))
        halt = asyncio.Event()
        running = asyncio.create_task(service.run(halt), name="autoscaler service")
        stack.push_async_callback(_stop_service, running, halt)
        interrupted = asyncio.create_task(interrupt.wait(), name="demo interrupt")
        stack.callback(interrupted.cancel)

        await _until_ready(service.ready, running, interrupted)
        # Ready means the HTTP server listens; an interrupt may come first (a slow start), and then the
        # header says so instead of asking a server that has no port yet for it.
        service_url = "not started"
        if service.ready.is_set() and service.http is not None:
            service_url = f"http://127.0.0.1:{service.http.port}"
        kubectl = [f"watch it        KUBECONFIG={user_kubeconfig} kubectl get st -w"]
        if options.keep_running:
            kubectl.append(
                f"change it       KUBECONFIG={user_kubeconfig} kubectl edit st {objects.WEB.name}  "
                "(the sandbox runs on after the curve, until Ctrl-C)"
            )
        _header(
            timeline,
            emulator.url,
            source.description,
            service_url,
            scale,
            duration,
            DEMO_CURVE,
            kubectl,
        )
        scale.start()
        recorder.begin()
        timeline.begin()
        kept = False
        while not interrupted.done() and not running.done():
            if scale.now() >= duration:
                if not options.keep_running:
                    break
                if not kept:
                    kept = True
                    timeline.say(
                        f"  demo time is up; the sandbox and the service keep running (the load goes on "
                        f"along the curve, then stays at its last value): kubectl edit st "
                        f"{objects.WEB.name} and watch the next decisions (Ctrl-C ends the demo)",
                        always=True,
                    )
            timeline.tick()
            left = duration - scale.now()
            wait = scale.wall(min(TICK, left) if left > 0 else TICK)
            await asyncio.wait({running, interrupted}, timeout=max(wait, 0.0))
        if running.done():
            raise DemoError(f"the service stopped during the demo: {_failure(running)}")
        return timeline.finish(time.monotonic() - started, interrupted=interrupted.done())
    raise AssertionError("unreachable")  # pragma: no cover - the exit stack does not swallow


async def _sandbox(emulator: KubeEmulator, scale: TimeScale) -> ClusterRecorder:
    """The CRDs, the Deployment with its running pods, the VPA, the pod lifecycle, and the target."""
    try:
        crd = await asyncio.to_thread(objects.scalingtarget_crd)
    except FileNotFoundError as exc:
        raise DemoError(str(exc)) from None
    emulator.install_crd(crd)
    emulator.install_crd(objects.VPA_CRD)
    recorder = ClusterRecorder(emulator, objects.WEB, scale)
    recorder.attach()
    stored = emulator.create(objects.deployment())
    emulator.seed(*objects.running_pods(stored, objects.INITIAL_REPLICAS), objects.vpa())
    # Started after the pods are in: it adopts them rather than starting new ones.
    await emulator.add_controller(
        WorkloadController(
            PodLifecycle(start_delay=scale.wall(config.POD_START_DELAY), ready_delay=scale.wall(config.POD_READY_DELAY))
        )
    )
    emulator.create(objects.target(scale))
    return recorder


async def _until_ready(ready: asyncio.Event, running: asyncio.Task[None], interrupted: asyncio.Task[bool]) -> None:
    waiting = asyncio.create_task(ready.wait())
    try:
        await asyncio.wait({waiting, running, interrupted}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if running.done():
        raise DemoError(f"the service did not start: {_failure(running)}")
    if not ready.is_set() and not interrupted.done():
        raise DemoError(f"the service was not ready within {READY_TIMEOUT:g} s")


def _failure(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "cancelled"
    exc = task.exception()
    return f"{type(exc).__name__}: {exc}" if exc is not None else "it returned"


async def _stop_service(running: asyncio.Task[None], halt: asyncio.Event) -> None:
    halt.set()
    try:
        async with asyncio.timeout(SHUTDOWN_SECONDS + 5):
            await asyncio.gather(running, return_exceptions=True)
    except TimeoutError:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


@contextlib.contextmanager
def _service_logging(tap: DecisionTap, log: TextIO | None) -> Iterator[None]:
    """The service logs as it always does; the demo listens for its decision lines. Without ``--log``
    only its warnings and errors reach the terminal (on stderr), so the timeline stays readable."""
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    # debug: the timeline also needs the steady syncs, which the service logs at debug.
    configure_logging(LoggingSettings("json" if log is not None else "auto", "debug"), stream=log or sys.stderr)
    if log is None:
        for handler in root.handlers:
            if handler not in before:
                handler.setLevel(logging.WARNING)
    root.addHandler(tap)
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in before:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)


def _header(
    timeline: Timeline,
    emulator_url: str,
    metrics: str,
    status: str,
    scale: TimeScale,
    duration: float,
    curve: LoadCurve,
    kubectl: list[str],
) -> None:
    say = timeline.say
    say("autoscaler demo: the real service against a sandbox on loopback (no cluster, no network)")
    say(
        f"  Kubernetes API  {emulator_url} (emulator: Deployment web with {objects.INITIAL_REPLICAS} pods, a VPA, "
        f"the ScalingTarget CRD)"
    )
    say(f"  metrics         {metrics}")
    say(f"  service         {status}/api/targets  (try: autoscaler explain web --url {status})")
    for line in objects.describe_target():
        say(f"  {line}")
    say(f"  load            {curve_text(curve)}")
    say(
        f"  time runs {scale.speed}× faster than real time: {clock_text(duration)} of demo time in about "
        f"{scale.wall(duration):.0f} s; all times below are demo times"
    )
    for line in kubectl:
        say(f"  {line}")
    say()


def curve_text(curve: LoadCurve) -> str:
    parts = []
    for phase in curve.phases:
        level = f"{phase.start:.0f}/s" if phase.start == phase.end else f"{phase.start:.0f} → {phase.end:.0f}/s"
        parts.append(f"{phase.name} {level} for {phase.seconds:.0f}s")
    return ", ".join(parts)


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
