"""The composite metric's formula: CEL (cel-python) checked, compiled once and evaluated on numbers.

A formula is a CEL expression over the target's External metrics (its variables, each a metric's value as
a number) that computes one number. CEL's syntax covers what KEDA's formulas (expr-lang) use: arithmetic,
comparisons, ``a ? b : c``, ``&&``, ``||``, ``!``, and the functions of :data:`FUNCTIONS`. Before a formula
is accepted it is checked here, statically, node by node: every variable is one of the target's External
metrics, every function is one of ours with the number of arguments it takes, and the value is a number
(a comparison is a boolean, usable in a condition only). What CEL has besides (strings, lists outside an
aggregate, maps, fields, methods, ``in``, ``%``) is refused with its position, so a formula that passes
cannot fail at run time for its shape: it fails only on its values (a division by zero gives a non-finite
number, which fails the composite: :mod:`autoscaler.core.composite`).

Numbers are doubles throughout: CEL's integer literals are read as doubles (``7 / 2`` is 3.5, as in expr,
not CEL's integer division), so a formula means what it would in KEDA. Never Python ``eval``: cel-python's
interpreter walks the parsed tree (its transpiling runner, which compiles Python, is not used).
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from autoscaler.core.composite_functions import BOUND, FUNCTIONS

Tree = lark.Tree[lark.Token]  # cel-python's parse trees

# CEL identifiers (the grammar's IDENT) that are not reserved words: what a variable's name must be.
_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
CEL_RESERVED = frozenset(
    {
        *("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if"),
        *("import", "let", "loop", "package", "namespace", "return", "var", "void", "while"),
    }
)


def is_cel_identifier(name: str) -> bool:
    """Whether ``name`` can be a formula variable (a CEL identifier, not a reserved word)."""
    return bool(_IDENTIFIER.match(name)) and name not in CEL_RESERVED


class FormulaProblem(ValueError):
    """A formula that cannot be accepted; the message says what and where (line, column and a caret)."""


class FormulaError(ArithmeticError):
    """A formula that could not be evaluated on this sync's values (the message says why)."""


_NUMBER = "number"
_BOOLEAN = "boolean"


def _first_token(node: Tree | lark.Token) -> lark.Token | None:
    if isinstance(node, lark.Token):
        return node
    for child in node.children:
        if child is not None:
            found = _first_token(child)
            if found is not None:
                return found
    return None


def caret_text(formula: str, line: int, column: int) -> str:
    """The formula's line ``line`` with a caret under ``column`` (both from 1), indented, as cel-python shows
    a syntax error."""
    lines = formula.splitlines() or [""]
    text = lines[min(max(line, 1), len(lines)) - 1]
    return f"    {text}\n    {' ' * max(column - 1, 0)}^"


def _problem(formula: str, node: Tree | lark.Token | None, message: str) -> FormulaProblem:
    token = _first_token(node) if node is not None else None
    if token is None or token.line is None or token.column is None:
        return FormulaProblem(message)
    return FormulaProblem(
        f"{message} at line {token.line}, column {token.column}:\n{caret_text(formula, token.line, token.column)}"
    )


def _children(tree: Tree) -> list[Any]:
    return [child for child in tree.children if child is not None]


_REFUSED = {
    "member_dot": "field selection (a.b) is not supported: a variable is an External metric's value, a number",
    "member_dot_arg": "method calls (a.f()) are not supported: call a function, f(a)",
    "member_index": "indexing (a[i]) is not supported: a variable is a number",
    "member_object": "message construction is not supported",
    "dot_ident": "a leading dot is not supported",
    "dot_ident_arg": "a leading dot is not supported",
    "map_lit": "maps are not supported: a formula computes a number",
    "relation_in": "'in' is not supported: a formula computes a number",
    "multiplication_mod": "% (remainder) is not supported: metric values are not whole numbers "
    "(KEDA's expr refuses % on them too)",
}
_LITERAL_REFUSED = {
    "STRING_LIT": "strings are not supported: a formula computes a number",
    "MLSTRING_LIT": "strings are not supported: a formula computes a number",
    "BYTES_LIT": "bytes are not supported: a formula computes a number",
    "NULL_LIT": "null is not supported: a failed input fails the composite (see spec.fallback for a count to use then)",
}
_COMPARISONS = frozenset({"relation_lt", "relation_le", "relation_gt", "relation_ge"})
_EQUALITIES = frozenset({"relation_eq", "relation_ne"})
_ARITHMETIC = frozenset({"addition_add", "addition_sub", "multiplication_mul", "multiplication_div"})
_OPERATOR_TEXT = {
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_eq": "==",
    "relation_ne": "!=",
    "addition_add": "+",
    "addition_sub": "-",
    "multiplication_mul": "*",
    "multiplication_div": "/",
}


class _Checker:
    """The static check: each node's kind (number or boolean), or a :class:`FormulaProblem`; records the
    variables the formula uses."""

    def __init__(self, formula: str, variables: frozenset[str]) -> None:
        self.formula = formula
        self.variables = variables
        self.used: list[str] = []

    def fail(self, node: Tree | lark.Token | None, message: str) -> FormulaProblem:
        return _problem(self.formula, node, message)

    def expect(self, node: Tree, kind: str, role: str) -> None:
        found = self.kind(node)
        if found != kind:
            raise self.fail(node, f"{role} must be a {kind}, not a {found}")

    def kind(self, tree: Tree) -> str:  # one case per rule of CEL's grammar
        rule = str(tree.data)
        children = _children(tree)
        if rule in _REFUSED:
            raise self.fail(tree, _REFUSED[rule])
        if rule == "expr":
            if len(children) == 1:
                return self.kind(children[0])
            condition, when_true, when_false = children
            self.expect(condition, _BOOLEAN, "the condition of ?:")
            kind = self.kind(when_true)
            self.expect(when_false, kind, "the branches of ?: must agree: the one after ':'")
            return kind
        if rule in ("conditionalor", "conditionaland"):
            if len(children) == 1:
                return self.kind(children[0])
            operator = "||" if rule == "conditionalor" else "&&"
            for child in children:
                self.expect(child, _BOOLEAN, f"each side of {operator}")
            return _BOOLEAN
        if rule in ("relation", "addition", "multiplication"):
            if len(children) == 1:
                return self.kind(children[0])
            operation, right = children
            operation_rule = str(operation.data)
            if operation_rule in _REFUSED:
                raise self.fail(operation, _REFUSED[operation_rule])
            (left,) = _children(operation)
            text = _OPERATOR_TEXT[operation_rule]
            if operation_rule in _EQUALITIES:
                kind = self.kind(left)
                self.expect(right, kind, f"the sides of {text} must agree: the right one")
                return _BOOLEAN
            self.expect(left, _NUMBER, f"each side of {text}")
            self.expect(right, _NUMBER, f"each side of {text}")
            return _BOOLEAN if operation_rule in _COMPARISONS else _NUMBER
        if rule == "unary":
            if len(children) == 1:
                return self.kind(children[0])
            operator, operand = children
            if str(operator.data) == "unary_not":
                self.expect(operand, _BOOLEAN, "the operand of !")
                return _BOOLEAN
            self.expect(operand, _NUMBER, "the operand of unary -")
            return _NUMBER
        if rule in ("member", "primary", "paren_expr"):
            return self.kind(children[0])
        if rule == "literal":
            return self.literal(tree, children[0])
        if rule == "ident":
            return self.ident(tree, str(children[0]))
        if rule == "ident_arg":
            return self.call(tree, children)
        if rule == "list_lit":
            raise self.fail(tree, "a list is only an argument of min, max, sum, mean or median")
        raise self.fail(tree, f"{rule} is not supported")

    def literal(self, tree: Tree, token: lark.Token) -> str:
        if token.type in _LITERAL_REFUSED:
            raise self.fail(tree, _LITERAL_REFUSED[token.type])
        return _BOOLEAN if token.type == "BOOL_LIT" else _NUMBER

    def ident(self, tree: Tree, name: str) -> str:
        if name not in self.variables:
            known = ", ".join(sorted(self.variables)) or "none"
            raise self.fail(
                tree,
                f'unknown variable "{name}" (the variables are the names of the target\'s External metrics: {known})',
            )
        if name not in self.used:
            self.used.append(name)
        return _NUMBER

    def call(self, tree: Tree, children: list[Any]) -> str:
        name = str(children[0])
        function = FUNCTIONS.get(name)
        if function is None:
            raise self.fail(tree, f'unknown function "{name}" (the functions: {", ".join(sorted(FUNCTIONS))})')
        arguments = _children(children[1]) if len(children) > 1 else []
        if function.aggregate is not None:
            if len(arguments) == 1 and _list_literal(arguments[0]) is not None:
                list_node = _list_literal(arguments[0])
                assert list_node is not None
                arguments = _children(_children(list_node)[0]) if _children(list_node) else []
            if not arguments:
                raise self.fail(tree, f"{name} takes at least one number")
        elif len(arguments) != function.arity:
            plural = "" if function.arity == 1 else "s"
            raise self.fail(tree, f"{name} takes {function.arity} argument{plural}, not {len(arguments)}")
        for argument in arguments:
            self.expect(argument, _NUMBER, f"an argument of {name}")
        return _NUMBER


def _list_literal(node: Tree) -> Tree | None:
    """The list literal ``node`` (an ``expr``) is made of alone, if it is one."""
    current: Any = node
    while isinstance(current, lark.Tree):
        if str(current.data) == "list_lit":
            return current
        children = _children(current)
        if len(children) != 1:
            return None
        current = children[0]
    return None


def _double_literals(tree: Tree) -> None:
    """Integer literals become double ones, in place: numbers are doubles throughout (the module docstring)."""
    for node in tree.iter_subtrees():
        if str(node.data) != "literal":
            continue
        token = node.children[0]
        if isinstance(token, lark.Token) and token.type in ("INT_LIT", "UINT_LIT"):
            text = str(token).rstrip("uU")
            negative = text.startswith("-")
            digits = text.lstrip("-")
            whole = int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 10)
            node.children[0] = lark.Token.new_borrow_pos("FLOAT_LIT", repr(float(-whole if negative else whole)), token)


@dataclass(frozen=True, slots=True)
class CompiledFormula:
    """A checked formula, ready to evaluate again and again: ``variables`` are the ones it uses."""

    formula: str
    variables: tuple[str, ...]
    runner: celpy.Runner

    def evaluate(self, values: Mapping[str, float]) -> float:
        """The formula's value for ``values`` (each variable's); :class:`FormulaError` when it has none."""
        context = {name: celtypes.DoubleType(values[name]) for name in self.variables}
        try:
            result = self.runner.evaluate(context)
        except (CELEvalError, ArithmeticError, ValueError, TypeError, RecursionError) as exc:
            raise FormulaError(f"the formula could not be evaluated: {exc.args[0] if exc.args else exc}") from exc
        if isinstance(result, bool | celtypes.BoolType):
            raise FormulaError(f"the formula gave a boolean ({str(bool(result)).lower()}), not a number")
        if isinstance(result, CELEvalError):
            raise FormulaError(f"the formula could not be evaluated: {result.args[0] if result.args else result}")
        value = float(cast(Any, result))
        if math.isnan(value):
            raise FormulaError("the formula gave NaN (0/0, or a function outside its domain?)")
        if math.isinf(value):
            raise FormulaError(f"the formula gave {'+' if value > 0 else '-'}Inf (division by zero?)")
        return value


# A formula is a line or a few, not a program: these bounds keep its check and its evaluation (both walk the
# tree recursively) far from Python's recursion limit. ~10 tree levels make one level of parentheses.
MAX_FORMULA_LENGTH = 4096
MAX_TREE_DEPTH = 400


def _environment() -> celpy.Environment:
    """A cel-python environment. Making one sets the process's recursion limit to 2500: a higher limit set by
    someone else is kept."""
    limit = sys.getrecursionlimit()
    environment = celpy.Environment()
    sys.setrecursionlimit(max(limit, sys.getrecursionlimit()))
    return environment


def _depth(tree: Tree) -> int:
    """The tree's depth, walked without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, lark.Tree):
            stack.extend((child, depth + 1) for child in node.children if child is not None)
    return deepest


def _parse(formula: str) -> Tree:
    if len(formula) > MAX_FORMULA_LENGTH:
        raise FormulaProblem(f"the formula is {len(formula)} characters long: at most {MAX_FORMULA_LENGTH}")
    try:
        tree = _environment().compile(formula)
    except CELParseError as exc:
        line = exc.line or 1
        column = exc.column or 1
        raise FormulaProblem(
            f"syntax error at line {line}, column {column}:\n{caret_text(formula, line, column)}"
        ) from exc
    except (lark.exceptions.LarkError, RecursionError) as exc:
        raise FormulaProblem(f"syntax error: {exc}") from exc
    depth = _depth(tree)
    if depth > MAX_TREE_DEPTH:
        raise FormulaProblem(
            f"the formula is nested too deeply: its parse tree is {depth} levels deep, at most {MAX_TREE_DEPTH} "
            "(about 35 levels of parentheses, or 190 operations in a row)"
        )
    return tree


@functools.lru_cache(maxsize=1024)
def compile_formula(formula: str, variables: frozenset[str]) -> CompiledFormula:
    """``formula`` checked against ``variables`` (the names it may use) and compiled: once per formula and
    names (cached), since a target's spec is parsed again on every change and its formula evaluated every
    sync. Raises :class:`FormulaProblem`."""
    tree = _parse(formula)
    checker = _Checker(formula, variables)
    kind = checker.kind(tree)
    if kind != _NUMBER:
        raise FormulaProblem(
            f"the formula must compute a number, not a {kind} (a comparison is a condition: use it in c ? a : b)"
        )
    _double_literals(tree)
    runner = _environment().program(tree, functions=BOUND)
    return CompiledFormula(formula, tuple(checker.used), runner)
