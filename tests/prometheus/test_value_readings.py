"""An Object/External answer read into its value in steps (issue 37, item 9): the same readings as one sort
of every series by its labels, in any order of the answer's series, with turns for the loop between the
steps, and the decoded series freed in steps too."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.observation import ExternalReading, MetricFailure, ObjectReading
from autoscaler.prometheus import MetricsReader, PrometheusClient, PrometheusSettings
from autoscaler.prometheus.extract import describe
from autoscaler.prometheus.results import InstantResult, Series, Vector, emptied_in_steps
from autoscaler.prometheus.sample_times import SampleTimes
from autoscaler.prometheus.sample_values import milli_or_none
from autoscaler.prometheus.value_readings import (
    STEP,
    SeriesValues,
    external_reading,
    label_key,
    object_reading,
    values_in_steps,
)
from tests.loop_turns import LoopTurns
from tests.prometheus import scenario as sc
from tests.prometheus.stepping import run_counting_turns, to_the_end
from tests.prometheus.test_reader import FakeClient, target


def sorted_at_once(series: Sequence[Series]) -> tuple[tuple[int, ...], int, float] | str:
    """What the reader made of an answer before it was read in steps: every series sorted by its sorted
    labels in one go; the first value that is not a number (in that order) fails it."""
    values = []
    for item in sorted(series, key=lambda s: sorted(s.labels.items())):
        value = milli_or_none(item.value)
        if value is None:
            where = f"series {describe(item.labels)}" if item.labels else "the scalar"
            return f"{where} has value {item.value}, which is not a number the autoscaler can use"
        values.append(value)
    return tuple(values), sum(values), max(s.timestamp for s in series)


def stepped(series: Sequence[Series], step: int) -> tuple[tuple[int, ...], int, float] | str:
    result = to_the_end(values_in_steps(InstantResult("vector", vector=Vector.of(series)), step=step))
    if isinstance(result, MetricFailure):
        return result.message
    return result.ordered, result.total, result.timestamp


_labels = st.dictionaries(
    st.sampled_from(["__name__", "queue", "queue_", "q", "zone", "a"]),
    st.text(alphabet="ab_-.é", max_size=3),
    max_size=4,
)
_value = st.sampled_from(["1", "0.0004", "2.5", "-3", "1e3", "NaN", "+Inf", "0"])


@given(
    items=st.lists(st.tuples(_labels, _value, st.sampled_from([5.0, 6.0])), min_size=1, max_size=30),
    step=st.integers(1, 7),
    seed=st.integers(0, 1000),
)
def test_stepped_reading_equals_one_sort_in_any_order(
    items: list[tuple[dict[str, str], str, float]], step: int, seed: int
) -> None:
    unique = list({tuple(sorted(labels.items())): (labels, value, at) for labels, value, at in items}.values())
    series = [Series(labels, at, value) for labels, value, at in unique]
    expected = sorted_at_once(series)
    assert stepped(series, step) == expected
    random.Random(seed).shuffle(series)
    assert stepped(series, step) == expected


def test_a_large_answer_is_read_in_steps_and_its_keys_sort_as_its_labels() -> None:
    count = 5 * STEP + 17
    series = [Series({"queue": f"q{(i * 7919) % count}", "zone": str(i % 3)}, 9.0, str(i % 5)) for i in range(count)]
    turns, result = run_counting_turns(values_in_steps(InstantResult("vector", vector=Vector.of(series))))
    assert isinstance(result, SeriesValues)
    assert (result.ordered, result.total, result.timestamp) == sorted_at_once(series)
    assert turns >= 3 * 5  # keys, merges, values: each a step of STEP series (or a few merges) at most
    assert label_key({"b": "1", "a": "x"}) == "a\x00x\x00b\x001\x00"
    # An Object metric's sum needs no order: one pass.
    object_turns, _ = run_counting_turns(
        values_in_steps(InstantResult("vector", vector=Vector.of(series)), ordered=False)
    )
    assert object_turns == 5


def test_readings_from_the_values() -> None:
    values = SeriesValues((1, 2000), 2001, 9.0)
    assert external_reading(values) == ExternalReading((1, 2000), 9.0)
    assert object_reading(values) == ObjectReading(2001, 9.0)
    failure = MetricFailure("x")
    assert external_reading(failure) is failure and object_reading(failure) is failure


def test_a_series_out_of_bounds_is_named_the_same_whatever_the_order() -> None:
    times = SampleTimes(300.0, 10.0)
    series = [Series({"queue": q}, 1000.0 - (400 if q in "cb" else 0), "1") for q in "dcab"]
    for order in (series, series[::-1]):
        failure = to_the_end(values_in_steps(InstantResult("vector", vector=tuple(order)), times, 1000.0, step=2))
        assert isinstance(failure, MetricFailure)
        assert failure.message.startswith('the sample of series {queue="b"} (and of 1 other series) is 7m old')
    scalar = InstantResult("scalar", scalar=Series({}, 1000.0 + 3600, "1"))
    failure = to_the_end(values_in_steps(scalar, times, 1000.0))
    assert isinstance(failure, MetricFailure) and failure.message.startswith("the scalar is 60m ahead")
    assert isinstance(to_the_end(values_in_steps(scalar, times, 1000.0 + 3600 + 300)), SeriesValues)


def test_a_vectors_series_are_freed_in_steps() -> None:
    vector = Vector.of(Series({"i": str(i)}, 1.0, "1") for i in range(10))
    turns, _ = run_counting_turns(emptied_in_steps(vector, step=3))
    assert (turns, len(vector), vector.labels, vector.timestamps) == (3, 0, [], [])
    series = (Series({}, 1.0, "1"),)
    assert run_counting_turns(emptied_in_steps(series, step=3)) == (0, None)  # not a Vector: left as it is
    assert series == (Series({}, 1.0, "1"),)


async def test_the_reader_reads_a_large_external_answer_with_the_loops_turns_between() -> None:
    count = 4 * STEP
    answer = Vector.of(Series({"queue": f"q{(i * 31) % count}"}, 1000.0, "0.001") for i in range(count))
    client = FakeClient(lambda promql: InstantResult("vector", vector=answer))
    reader = MetricsReader(
        cast(PrometheusClient, client), PrometheusSettings(url="http://prom"), sample_times=SampleTimes()
    )
    metrics = [sc.external_metric("sum(queue)"), sc.object_metric("sum(queue)")]
    targets = [target("a", "x", ("p",), metrics), target("a", "y", ("p",), metrics[:1])]
    async with LoopTurns() as turns:
        rows = await reader.read(targets, 1000.0)
    assert turns.count >= 10
    assert rows[0][0] == rows[1][0] == ExternalReading((1,) * count, 1000.0)
    assert rows[0][1] == ObjectReading(count, 1000.0)
    assert len(client.queries) == 1 and len(answer) == 0  # asked once for both targets, and freed in steps


def test_nulls_as_zero_reads_what_keda_reads_as_zero_and_nothing_else() -> None:
    """ignoreNullValues: NaN and ±Inf are 0 among the other series' values (in their place), an empty answer is
    one 0 at the evaluation time; a value that does not parse, or a range vector, still fails."""
    series = [Series({"queue": "c"}, 9.0, "NaN"), Series({"queue": "a"}, 8.0, "2"), Series({"queue": "b"}, 7.0, "-Inf")]
    read = to_the_end(values_in_steps(InstantResult("vector", vector=Vector.of(series)), nulls_as_zero=True, step=2))
    assert isinstance(read, SeriesValues) and (read.ordered, read.total, read.timestamp) == ((2000, 0, 0), 2000, 9.0)
    assert isinstance(to_the_end(values_in_steps(InstantResult("vector", vector=Vector.of(series)))), MetricFailure)
    empty = to_the_end(values_in_steps(InstantResult("vector", vector=Vector.of([])), None, 42.0, nulls_as_zero=True))
    assert isinstance(empty, SeriesValues) and (empty.ordered, empty.total, empty.timestamp) == ((0,), 0, 42.0)
    garbage = [Series({"queue": "a"}, 8.0, "twelve")]
    assert isinstance(
        to_the_end(values_in_steps(InstantResult("vector", vector=Vector.of(garbage)), nulls_as_zero=True)),
        MetricFailure,
    )
    assert isinstance(to_the_end(values_in_steps(InstantResult("matrix"), nulls_as_zero=True)), MetricFailure)
