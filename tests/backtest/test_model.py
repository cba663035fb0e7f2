"""The simulated workload (docs/backtest.md, "Modelling the simulated workload"): which real pods
are kept, how added pods start, and load conserved per metric and container."""

from __future__ import annotations

from autoscaler.backtest.model import SimulatedWorkload, rescale
from autoscaler.backtest.workload import RealWorkload
from autoscaler.core.observation import (
    ConditionStatus,
    ContainerInfo,
    ExternalReading,
    Observation,
    PodInfo,
    PodPhase,
    PodsReading,
    PodUsage,
    ResourceReading,
    Sample,
)

NOW = 10_000.0
APP = (ContainerInfo("app", {"cpu": 500}),)


def pod(
    name: str,
    *,
    ready: bool = True,
    since: float = 0.0,
    started: float = 0.0,
    phase: PodPhase = PodPhase.RUNNING,
    deleting: bool = False,
) -> PodInfo:
    return PodInfo(name, phase, ConditionStatus.TRUE if ready else ConditionStatus.FALSE, since, started, deleting, APP)


def usage(**containers: int | None) -> PodUsage:
    return PodUsage(dict(containers), NOW, 120.0)


REAL = RealWorkload(
    (
        pod("a", since=100),
        pod("b", since=50),
        pod("c", ready=False, since=300, started=200),
        pod("d", phase=PodPhase.FAILED),
        pod("e", deleting=True),
    ),
    replicas=3,
    spec_replicas=3,
)
CPU = ResourceReading(
    {
        "a": usage(app=300, side=30),
        "b": usage(app=200, side=None),
        "c": usage(app=100, side=20),
        "d": usage(app=999),
        "e": usage(app=999),
    }
)
RPS = PodsReading({"a": Sample(3000, NOW), "b": Sample(6000, NOW), "c": Sample(0, NOW)})
QUEUE = ExternalReading((42_000,), NOW)


def test_same_count_as_really_ran_is_the_history_itself() -> None:
    observation = SimulatedWorkload("web-backtest-", 0).observe(REAL, [CPU, RPS, QUEUE], 3, NOW, "app=web")
    assert observation.pods == REAL.pods
    assert list(observation.readings) == [CPU, RPS, QUEUE]
    assert (observation.scale.spec_replicas, observation.scale.status_replicas) == (3, 3)


def test_fewer_keeps_the_pods_a_replica_set_keeps_and_conserves_load() -> None:
    observation = SimulatedWorkload("web-backtest-", 0).observe(REAL, [CPU, RPS, QUEUE], 1, NOW, "app=web")
    # Ready longest (b, ready since 50) is kept; the failed and the deleting pods stay, ignored by the engine.
    assert [p.name for p in observation.pods] == ["b", "d", "e"]
    cpu, rps, queue = observation.readings
    assert isinstance(cpu, ResourceReading) and isinstance(rps, PodsReading)
    assert cpu.pods["b"].containers == {"app": 600, "side": None}  # all 600m of app; b reports no side usage
    assert cpu.pods["d"].containers == {"app": 999}  # not live: unchanged
    assert rps.pods["b"].value == 9000
    assert queue == QUEUE  # Object/External: not per pod


def test_more_adds_pods_with_the_average_and_conserves_load() -> None:
    observation = SimulatedWorkload("web-backtest-", 0).observe(REAL, [CPU, RPS], 5, NOW, "app=web")
    names = [p.name for p in observation.pods]
    assert names == ["a", "b", "c", "d", "e", "web-backtest-1", "web-backtest-2"]
    cpu, rps = observation.readings
    assert isinstance(cpu, ResourceReading) and isinstance(rps, PodsReading)
    live = ["a", "b", "c", "web-backtest-1", "web-backtest-2"]
    assert sum(cpu.pods[n].containers["app"] or 0 for n in live) == 600  # 300 + 200 + 100
    # 30 + 20, conserved per container: 15 + 10 + 12.5 + 12.5, each rounded half up to the milli.
    assert sum(cpu.pods[n].containers.get("side") or 0 for n in live) == 51
    assert sum(rps.pods[n].value for n in live) == 9000
    # Each keeps its share: every value × 3/5, added pods carry the average.
    assert cpu.pods["a"].containers == {"app": 180, "side": 15}
    assert cpu.pods["web-backtest-1"].containers == {"app": 120, "side": 13}  # 25 × 0.5 = 12.5 → 13 (half up)
    assert rps.pods["web-backtest-2"] == Sample(1800, NOW)
    added = observation.pods[-1]
    assert (added.phase, added.ready, added.started_at, added.ready_since) == (
        PodPhase.RUNNING,
        ConditionStatus.TRUE,
        NOW,
        NOW,
    )
    assert added.containers == APP


def test_added_pods_start_up_keep_their_names_and_go_newest_first() -> None:
    workload = SimulatedWorkload("web-backtest-", 30)
    first = workload.observe(REAL, [CPU, RPS], 5, NOW, "s")
    pending = first.pods[-1]
    assert (pending.phase, pending.ready) == (PodPhase.PENDING, ConditionStatus.FALSE)
    cpu = first.readings[0]
    assert isinstance(cpu, ResourceReading)
    assert "web-backtest-1" not in cpu.pods and cpu.pods["a"].containers["app"] == 300  # pending pods carry nothing
    later = workload.observe(REAL, [CPU, RPS], 4, NOW + 30, "s")
    assert [p.name for p in later.pods][-1:] == ["web-backtest-1"]  # web-backtest-2 (newest) went first
    assert later.pods[-1].phase is PodPhase.RUNNING and later.pods[-1].ready_since == NOW + 30
    again = workload.observe(REAL, [CPU, RPS], 5, NOW + 45, "s")
    assert [p.name for p in again.pods][-2:] == ["web-backtest-1", "web-backtest-3"]


def test_rescale_without_samples_or_live_pods() -> None:
    empty = PodsReading({})
    assert rescale(empty, {"a"}, {"a"}, ["x"]) == PodsReading({})
    only_dead = ResourceReading({"d": usage(app=5)})
    assert rescale(only_dead, set(), set(), ["x"]) == only_dead


def _serving(observation: Observation) -> list[str]:
    return sorted(p.name for p in observation.pods if p.phase is PodPhase.RUNNING and p.ready is ConditionStatus.TRUE)


def test_with_a_start_up_a_real_pod_brought_back_starts_up_too() -> None:
    """The replay went down to 2 of the 3 real ready pods, then back to 3: the real pod it brings back is
    one it adds, Pending until --pod-startup has passed (the history shows it ready all along)."""
    ready = RealWorkload((pod("a", since=100), pod("b", since=50), pod("x", since=10)), 3, 3)
    workload = SimulatedWorkload("web-backtest-", 30)
    assert _serving(workload.observe(ready, [RPS], 3, NOW, "s")) == ["a", "b", "x"]
    # Down to 2: the two ready longest stay (x, b); back to 3: a returns, and starts up.
    assert _serving(workload.observe(ready, [RPS], 2, NOW + 15, "s")) == ["b", "x"]
    back = workload.observe(ready, [RPS], 3, NOW + 30, "s")
    assert _serving(back) == ["b", "x"]
    rps = back.readings[0]
    assert isinstance(rps, PodsReading) and "a" not in rps.pods  # a starting pod carries nothing
    assert sum(s.value for s in rps.pods.values()) == 9000  # the load is conserved on the serving pods
    assert _serving(workload.observe(ready, [RPS], 3, NOW + 60, "s")) == ["a", "b", "x"]


def test_with_a_start_up_the_replays_own_replicas_keep_serving_when_the_history_catches_up() -> None:
    """The replay scaled 2 → 3 early; when the real workload adds its own third pod (Pending in the history),
    the replay's replica that started long ago serves: the real pod stands for it, carrying the average."""
    two = RealWorkload((pod("a", since=100), pod("b", since=50)), 2, 2)
    workload = SimulatedWorkload("web-backtest-", 30)
    workload.observe(two, [RPS], 2, NOW, "s")
    assert _serving(workload.observe(two, [RPS], 3, NOW + 15, "s")) == ["a", "b"]  # web-backtest-1 starting
    assert _serving(workload.observe(two, [RPS], 3, NOW + 45, "s")) == ["a", "b", "web-backtest-1"]
    late = pod("c", ready=False, since=NOW + 50, started=NOW + 50, phase=PodPhase.PENDING)
    three = RealWorkload((pod("a", since=100), pod("b", since=50), late), 3, 3)
    caught_up = workload.observe(three, [RPS], 3, NOW + 60, "s")
    assert _serving(caught_up) == ["a", "b", "c"]
    rps = caught_up.readings[0]
    # c carries the real pods' average (3000, its own 0 included), all scaled so that the total stays 9000.
    assert isinstance(rps, PodsReading) and rps.pods["c"].value == 2250
    assert sum(s.value for s in rps.pods.values()) == 9000


def test_without_a_start_up_the_history_decides_readiness_as_before() -> None:
    two = RealWorkload((pod("a", since=100), pod("b", since=50)), 2, 2)
    workload = SimulatedWorkload("web-backtest-", 0)
    workload.observe(two, [RPS], 2, NOW, "s")
    late = pod("c", ready=False, since=NOW + 50, started=NOW + 50, phase=PodPhase.PENDING)
    three = RealWorkload((pod("a", since=100), pod("b", since=50), late), 3, 3)
    observation = workload.observe(three, [RPS], 3, NOW + 60, "s")
    assert observation.pods == three.pods and _serving(observation) == ["a", "b"]
