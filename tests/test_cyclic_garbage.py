"""A sync's parts leave no cyclic garbage, compiled or not.

Reference counting frees what a sync makes the moment it is done with; only a reference cycle waits for the
cyclic collector, and the service runs a full collection every five minutes at most
(``loop/collector.py``): a cycle that outlived the young collections (a read lasts seconds) keeps
everything it holds until then. Pure Python's closures make no cycle, but compiled with mypyc nested
functions close over an environment object that holds them in turn when one calls another, so the modules
``autoscaler/native.py`` lists define none: with the
coroutine modules compiled, the service's memory grew by the weight of each period's readings
(docs/benchmarks-history.md, "Cyclic garbage of the compiled build"). CI runs these on the compiled modules.
"""

from __future__ import annotations

import ast
import asyncio
import gc
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest

from autoscaler import native
from autoscaler.core.decision import decide
from autoscaler.core.observation import MetricReading
from autoscaler.prometheus.queries import TargetQuery
from autoscaler.prometheus.reader import OnReady
from autoscaler.service.sync.batcher import MetricsBatcher
from tests.core import test_decision as d
from tests.prometheus import scenario as sc
from tests.prometheus.test_reader import make_reader, series, target, vector


@contextmanager
def no_cyclic_garbage() -> Iterator[None]:
    """Fails unless the block leaves nothing for the cyclic collector (it does not run meanwhile)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collection finds is kept in gc.garbage, to be named
        found = gc.collect()
        kinds = sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage})
        assert found == 0, f"{found} objects freed only by the cyclic collector: {kinds[:20]}"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def test_a_decision_leaves_no_cyclic_garbage() -> None:
    cases = [
        (d.target(), d.observe(3, cpu_milli=900)),  # metrics read, scaled
        (d.target(), d.observe(0, cpu_milli=900)),  # disabled at zero
        (d.target(max_replicas=2), d.observe(5)),  # above the maximum, no metric read
        (d.target(), d.observe(2, cpu_milli=10, selector="")),  # the selector's branch
    ]
    for spec, observation in cases:
        decide(spec, observation, d.OLD, d.SETTINGS, d.NOW)  # a first call's lazily built module state
    with no_cyclic_garbage():
        for spec, observation in cases:
            decide(spec, observation, d.OLD, d.SETTINGS, d.NOW)


def _drive(make: Callable[[], Awaitable[object]]) -> None:
    """Run ``make()`` on a loop of its own, twice: the second run, whose loop already exists and has run
    once, is the one checked."""
    with asyncio.Runner() as runner:
        runner.run(_awaited(make()))
        with no_cyclic_garbage():
            runner.run(_awaited(make()))


async def _awaited(awaitable: Awaitable[object]) -> None:
    await awaitable


def test_a_read_leaves_no_cyclic_garbage() -> None:
    answer = vector(series("1", namespace="a", pod="p1"), series("2", namespace="b", pod="p1"))
    reader, _ = make_reader(lambda _query: answer)
    targets = [
        target("a", "x", ("p1",), [sc.pods_metric(sc.rps_query("m"))]),
        target("b", "y", ("p1", "p2"), [sc.pods_metric(sc.rps_query("m"))]),
    ]
    handed: list[int] = []
    _drive(lambda: reader.read(targets, 1000.0, on_ready=lambda index, _row: handed.append(index)))
    assert sorted(handed) == [0, 0, 1, 1]


class _Reader:
    async def __call__(
        self, queries: Sequence[TargetQuery], at: float | None, *, on_ready: OnReady | None = None
    ) -> list[list[MetricReading]]:
        await asyncio.sleep(0)  # suspended in the read, as a real one is
        rows: list[list[MetricReading]] = [[] for _ in queries]
        if on_ready is not None:
            on_ready(0, rows[0])
        return rows


def test_a_batch_leaves_no_cyclic_garbage() -> None:
    queries = [target("a", f"t{i}", ("p1",), []) for i in range(3)]

    async def batch() -> list[list[MetricReading]]:
        batcher = MetricsBatcher(_Reader(), window=0)
        rows = await asyncio.gather(*(batcher.read(q) for q in queries))
        await batcher.close()  # the batch's task done and dropped: what is left is garbage or nothing
        return rows

    _drive(batch)


@pytest.mark.parametrize("module", native.COMPILED)
def test_a_compiled_module_defines_no_nested_function(module: str) -> None:
    """The rule behind the tests above, for every module compiled: a function defined inside another is
    where the compiled build's cycles come from (a lambda passed on as an argument is not kept by its
    function, and makes none)."""
    tree = ast.parse(native.source_path(module).read_text())
    nested = [
        f"{outer.name} defines {inner.name} (line {inner.lineno})"
        for outer in ast.walk(tree)
        if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef)
        for inner in ast.walk(outer)
        if inner is not outer and isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    assert not nested, f"{module}: {nested}; make it a module function or a method"
