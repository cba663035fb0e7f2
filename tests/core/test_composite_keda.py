"""KEDA's formulas (expr-lang) rewritten as this autoscaler's (CEL), or refused with the reason and position;
each converted formula is then accepted by the formula check and computes what expr computes."""

from __future__ import annotations

import pytest

from autoscaler.core.composite_formula import compile_formula
from autoscaler.core.composite_keda import keda_formula_to_cel

VARIABLES = frozenset({"trig_one", "trig_two", "trig_three", "a", "b", "c"})


@pytest.mark.parametrize(
    ("keda", "cel", "values", "expected"),
    [
        # KEDA's documentation and tests.
        ("trig_one + trig_two", "trig_one + trig_two", {"trig_one": 1, "trig_two": 2}, 3),
        ("(trig_one + trig_two)/2", "(trig_one + trig_two) / 2", {"trig_one": 1, "trig_two": 2}, 1.5),
        (
            "trig_one < 2 ? trig_one + trig_two : 1",
            "trig_one < 2 ? trig_one + trig_two : 1",
            {"trig_one": 1, "trig_two": 2},
            3,
        ),
        ("float(trig_one)", "float(trig_one)", {"trig_one": 4}, 4),
        # expr's words and power operators.
        (
            "a > 1 and b > 1 or not (c == 2) ? 10 : 0",
            "a > 1 && b > 1 || !(c == 2) ? 10 : 0",
            {"a": 0, "b": 0, "c": 2},
            0,
        ),
        ("a ** 2 ** 0.5", "pow(a, pow(2, 0.5))", {"a": 4}, 4 ** (2**0.5)),  # right-associative
        ("-a ^ 2", "-pow(a, 2)", {"a": 3}, -9),  # expr: unary minus binds looser than ^
        # Precedence kept, parentheses only where needed.
        ("a - (b - c)", "a - (b - c)", {"a": 10, "b": 5, "c": 2}, 7),
        ("a - b - c", "a - b - c", {"a": 10, "b": 5, "c": 2}, 3),
        ("a / (b * c)", "a / (b * c)", {"a": 12, "b": 3, "c": 2}, 2),
        ("a > b ? a > c ? 1 : 2 : 3", "a > b ? (a > c ? 1 : 2) : 3", {"a": 2, "b": 1, "c": 3}, 2),
        ("(a > b ? 1 : 2) + 3", "(a > b ? 1 : 2) + 3", {"a": 2, "b": 1}, 4),
        ("max(a, b) * 1_000 + 0x10 + .5", "max(a, b) * 1000 + 16 + 0.5", {"a": 1, "b": 2}, 2016.5),
        ("median([a, b, c])", "median([a, b, c])", {"a": 1, "b": 7, "c": 3}, 3),
        (
            "abs(a - b) > 5 ? ceil(a/10) : floor(b/10)",
            "abs(a - b) > 5 ? ceil(a / 10) : floor(b / 10)",
            {"a": 1, "b": 19},
            1,
        ),
    ],
)
def test_a_keda_formula_converts_and_computes_the_same(
    keda: str, cel: str, values: dict[str, float], expected: float
) -> None:
    converted = keda_formula_to_cel(keda)
    assert (converted.cel, converted.problem) == (cel, None)
    assert compile_formula(cel, VARIABLES).evaluate(values) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("keda", "problem"),
    [
        (
            "trig_one ?? 0",
            "?? (nil coalescing) has no equivalent: a failed input fails the composite here (spec.fallback says what "
            "to do then) (at character 10 of 'trig_one ?? 0')",
        ),
        (
            "count([trig_one, trig_two], {# > 1}) > 1 ? 5 : 0",
            "closures and predicates ({# > 1} in count, all, any, filter...) and maps have no equivalent",
        ),
        ("trig_one == nil ? 0 : trig_one", "nil has no equivalent"),
        ("let x = a; x * 2", "let has no equivalent: write the expression in place of the name (at character 1"),
        ("if a > 1 { 2 } else { 3 }", "if/else has no equivalent: write cond ? a : b"),
        (
            "a % 2",
            "% has no equivalent: metric values are not whole numbers (expr refuses % on them too) (at character 3",
        ),
        ("a.value", "member access (a.b) has no equivalent"),
        ("a in [1, 2]", "'in' has no equivalent"),
        ("'a' + b", "strings have no equivalent"),
        ("1..3", "ranges (..) have no equivalent"),
        (
            "sqrt(a)",
            'function "sqrt" has no equivalent (the functions: abs, ceil, double, float, floor, int, max, mean, '
            "median, min, pow, round, sum) (at character 1",
        ),
        ("a +", "the formula ends where a value was expected (at character 4 of 'a +')"),
        ("a b", "unexpected 'b' (at character 3 of 'a b')"),
        ("(a + b", "expected ')' (at character 7"),
    ],
)
def test_a_keda_formula_without_equivalent_is_refused_saying_why(keda: str, problem: str) -> None:
    converted = keda_formula_to_cel(keda)
    assert converted.cel is None
    assert converted.problem is not None and converted.problem.startswith(problem)
