"""A newcomer following one sync opens at most 15 product files (issue 38).

docs/decisions.md, "Following one sync", lists them in the order a sync goes through them. This test holds
the list to what runs: one steady sync of a target (the tests' usual one: an External metric read from
Prometheus), against the API emulator and a Prometheus on loopback, with every product module whose code
runs in it recorded (``sys.setprofile``). Each is in the list, or is one of the modules a reader need not
open to follow the sync, named below with why.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from aiohttp import web

from autoscaler import native
from autoscaler.kube.api import KubeApi
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings
from autoscaler.service.sync.reconciler import TargetReconciler
from kube_emulator import KubeEmulator, PodLifecycle, WorkloadController
from tests.prometheus.fake_server import FakePrometheus, Request, json_response
from tests.service.cluster import CRD, deployment, target
from tests.service.manager_setup import build_manager, manager_options

ROOT = Path(__file__).resolve().parent.parent
DECISIONS = ROOT / "docs" / "decisions.md"
MAX_FILES = 15

# Modules a steady sync runs that a reader following it need not open, each with why. What a sync calls in
# them is named at the call, and says what it gives: a record or value by its name, a step by its docstring.
RECORDS = "records and values: what they hold is in the name the path reads them by"
UNUSED_STEP = "a step of core/sync.py for a feature this target does not use: it hands its input on"
PLUMBING = "plumbing under a call on the path, whose name and docstring say what it gives"
NOT_ON_THE_PATH: dict[str, str] = {
    "autoscaler.core.observation": RECORDS,
    "autoscaler.core.results": RECORDS,
    "autoscaler.core.history": RECORDS,
    "autoscaler.core.settings": RECORDS,
    "autoscaler.core.spec": RECORDS,
    "autoscaler.core.conditions": RECORDS,  # set_condition, find_condition
    "autoscaler.core.gomath": RECORDS,  # Go's integer and float arithmetic, as upstream does it
    "autoscaler.core.replicas": RECORDS,  # per_pod_replicas: the count one metric asks for (core/metrics.py reads it)
    "autoscaler.values.quantity": RECORDS,
    "autoscaler.values.durations": RECORDS,
    "autoscaler.kube.labels": RECORDS,
    "autoscaler.kube.scale": RECORDS,  # the Scale record
    "autoscaler.prometheus.results": RECORDS,  # an answer as records (InstantResult, its vector)
    "autoscaler.prometheus.queries": RECORDS,  # TargetQuery, and a metric's query template rendered
    "autoscaler.prometheus.promql": RECORDS,  # a PromQL string literal
    "autoscaler.prometheus.settings": RECORDS,
    "autoscaler.prometheus.sample_times": RECORDS,  # how old a sample may be
    "autoscaler.prometheus.sample_values": RECORDS,  # a sample's text into milli-units
    "autoscaler.core.activation": UNUSED_STEP,
    "autoscaler.core.prediction.condition": UNUSED_STEP,  # the Predicting condition: none without spec.prediction
    "autoscaler.core.composite": UNUSED_STEP,
    "autoscaler.core.pause": UNUSED_STEP,
    "autoscaler.core.other_autoscalers": UNUSED_STEP,  # hold(): None while nothing else scales the workload
    "autoscaler.core.rescale": UNUSED_STEP,  # apply_scale_result: what a scale write records (none here)
    "autoscaler.service.sync.status.sections": UNUSED_STEP,  # lastActiveTime, metricHealth, pause: none here
    "autoscaler.prometheus.sending": PLUMBING,  # QuerySender.send: one target's slots, a rejected query's backoff
    "autoscaler.prometheus.answers": PLUMBING,  # the HTTP body read and decoded
    "autoscaler.prometheus.auth": PLUMBING,  # the request's credentials
    "autoscaler.prometheus.partial": PLUMBING,  # whether an answer is partial
    "autoscaler.loop.pacing": PLUMBING,  # results passed on a few per turn of the event loop
    "autoscaler.loop.turns": PLUMBING,  # work done in steps between the loop's turns
    "autoscaler.loop.clock": PLUMBING,  # the decisions' "now"
    "autoscaler.loop.collector": PLUMBING,  # the cyclic collector held off while an answer is decoded
    "autoscaler.kube.pods": PLUMBING,  # the pods a selector picks, from the cache
    "autoscaler.kube.watch": PLUMBING,  # the watch cache's get
    "autoscaler.service.cluster.caches": PLUMBING,  # the caches the view reads
    "autoscaler.service.cluster.other_autoscalers": PLUMBING,  # which HPA or ScaledObject scales a workload
    "autoscaler.service.cluster.targets": PLUMBING,  # Target.key
    "autoscaler.service.sync.scales": PLUMBING,  # the scale read from the Deployment cache
    "autoscaler.service.sync.schedule": PLUMBING,  # the concurrency slot given back while the metrics are read
    "autoscaler.service.telemetry.metrics_sink": PLUMBING,  # the gauges and counters a sync sets
}


def reading_path() -> list[str]:
    """The files docs/decisions.md's "Following one sync" lists, in its order."""
    text = DECISIONS.read_text(encoding="utf-8")
    section = re.search(r"^## Following one sync\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert section is not None, 'docs/decisions.md has no "## Following one sync" section'
    return re.findall(r"^\d+\. `(autoscaler/[\w/]+\.py)`", section.group(1), re.MULTILINE)


def module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


@contextmanager
def modules_run(skip: set[asyncio.Task[object]]) -> Iterator[set[str]]:
    """The ``autoscaler`` modules whose functions are called meanwhile, in this thread, outside the tasks in
    ``skip`` (the caches' watches, which the emulator's bookmarks wake at any moment)."""
    found: set[str] = set()
    current_task = asyncio.current_task

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("autoscaler.") and name not in found and current_task() not in skip:
                found.add(name)

    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)


async def _queue_of_20(_request: Request) -> web.StreamResponse:
    """``sum(queue)`` is 20: two replicas at 10 a replica, the count the workload has (a steady sync)."""
    result = [{"metric": {}, "value": [time.time(), "20"]}]
    return json_response({"status": "success", "data": {"resultType": "vector", "result": result}})


async def steady_sync_modules() -> set[str]:
    prometheus = await FakePrometheus().start()
    prometheus.handler = _queue_of_20
    settings = PrometheusSettings(url=prometheus.url)
    try:
        async with (
            KubeEmulator(bookmark_interval=0.5, controllers=[WorkloadController(PodLifecycle())]) as emu,
            PrometheusClient(settings) as client,
            emu.api_client() as api,
        ):
            emu.install_crd(CRD)
            emu.create(deployment("web", 2))
            emu.create(target("web", "web"))
            manager = build_manager(KubeApi(api), MetricsReader(client, settings).read, **manager_options())
            await manager.start_caches()
            try:
                await manager.wait_synced()
                web_target = manager.cluster.targets[None].get("default", "web")
                assert web_target is not None
                reconciler = TargetReconciler(web_target, manager.view, manager.writer, manager.context)
                first = await reconciler.sync_once()  # restores the state, writes the first status
                assert first is not None and not first.scale
                watches = set(asyncio.all_tasks()) - {asyncio.current_task()}
                with modules_run(watches) as found:
                    steady = await reconciler.sync_once()
                assert steady is not None and not steady.scale and steady.replicas == 2
                return found
            finally:
                await manager.stop()
    finally:
        await prometheus.close()


def test_the_reading_path_is_at_most_15_files_that_exist() -> None:
    path = reading_path()
    assert path, "the section lists no file"
    assert len(path) <= MAX_FILES, path
    assert len(set(path)) == len(path), path
    for file in path:
        assert (ROOT / file).is_file(), file
    # A module is on the path or named as off it, not both; and every one named exists.
    assert not {module_of(file) for file in path} & set(NOT_ON_THE_PATH)
    for module in NOT_ON_THE_PATH:
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module


def test_every_module_a_steady_sync_runs_is_on_the_reading_path_or_named_here() -> None:
    found = asyncio.run(steady_sync_modules())
    listed = {module_of(file) for file in reading_path()}
    missing = sorted(found - listed - set(NOT_ON_THE_PATH))
    assert not missing, f"a steady sync runs these, neither on the reading path nor named as values: {missing}"
    # The list holds nothing a sync does not run (a stale entry misleads as much as a missing one). Compiled
    # (mypyc) code runs without profile events: on the compiled build its modules cannot be seen running, and
    # only the rest are checked here (the interpreted build's run of this test checks them all).
    unseen = set(native.compiled())
    assert listed - unseen <= found, sorted(listed - unseen - found)
