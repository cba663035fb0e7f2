"""A KEDA ``scalingModifiers.formula`` (expr-lang) rewritten as this autoscaler's formula (CEL), or why not.

KEDA evaluates its formulas with expr-lang; ours are CEL (:mod:`autoscaler.core.composite_formula`). The
two agree on most of what formulas use: numbers, variables, ``+ - * /``, comparisons, ``a ? b : c``,
``&& || !`` and calls of the common functions. What differs is rewritten: expr's words ``and``, ``or``,
``not`` become ``&&``, ``||``, ``!``; its power operators ``x ** y`` and ``x ^ y`` become ``pow(x, y)``;
its ternary, whose branches expr lets be of any type, is kept as it is. The formula is read with expr's own
precedences (parser/operator in expr-lang) and written back with every operation parenthesized only where
CEL's precedences would read it otherwise, so the result means what the input meant.

What has no equivalent is refused with the reason and its position: ``??`` and ``nil`` (a failed input
fails the composite here: ``spec.fallback`` is the way to say what to do then), closures and predicates
(``count(list, {# > 1})``, ``all``, ``filter``...), ``let``, ``if``/``else``, strings, maps, member access
and ranges (``..``), ``%`` (metric values are not whole numbers), and any function not in
:data:`~autoscaler.core.composite_formula.FUNCTIONS`.

``autoscaler convert`` calls :func:`keda_formula_to_cel`; the CEL it returns is then checked like any
formula when the target is parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autoscaler.core.composite_functions import FUNCTIONS


@dataclass(frozen=True, slots=True)
class Converted:
    """A KEDA formula converted: ``cel`` the formula to write (None when it cannot be), ``problem`` why not."""

    cel: str | None
    problem: str | None = None


class _Refused(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


_TOKEN = re.compile(
    r"\s*(?:(?P<number>0[xX][0-9a-fA-F_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_$][A-Za-z0-9_$]*)"
    r"|(?P<op>\*\*|\?\?|\?\.|==|!=|<=|>=|&&|\|\||\.\.|[-+*/%^<>!?:(),\[\]{}.#;=|'\"`]))"
)

# expr-lang's binary operators: precedence and whether right-associative (parser/operator/operator.go).
_BINARY = {
    "||": (10, False),
    "&&": (15, False),
    "==": (20, False),
    "!=": (20, False),
    "<": (20, False),
    ">": (20, False),
    ">=": (20, False),
    "<=": (20, False),
    "+": (30, False),
    "-": (30, False),
    "*": (60, False),
    "/": (60, False),
    "**": (100, True),
    "^": (100, True),
}
_WORD_OPERATORS = {"and": "&&", "or": "||"}
_REFUSED_WORDS = {
    "nil": "nil has no equivalent: a failed input fails the composite here (spec.fallback says what to do then)",
    "let": "let has no equivalent: write the expression in place of the name",
    "if": "if/else has no equivalent: write cond ? a : b",
    "in": "'in' has no equivalent: a formula computes a number",
    "matches": "string operators have no equivalent: a formula computes a number",
    "contains": "string operators have no equivalent: a formula computes a number",
    "startsWith": "string operators have no equivalent: a formula computes a number",
    "endsWith": "string operators have no equivalent: a formula computes a number",
}
_CLOSURES = (
    "closures and predicates ({# > 1} in count, all, any, filter...) and maps have no equivalent: write the "
    "comparisons out, e.g. count([a, b], {# > 1}) as (a > 1 ? 1 : 0) + (b > 1 ? 1 : 0)"
)
_REFUSED_OPERATORS = {
    "??": "?? (nil coalescing) has no equivalent: a failed input fails the composite here "
    "(spec.fallback says what to do then)",
    "?.": "?. (optional chaining) has no equivalent: a variable is a number",
    "%": "% has no equivalent: metric values are not whole numbers (expr refuses % on them too)",
    "..": "ranges (..) have no equivalent: a formula computes a number",
    "#": _CLOSURES,
    "{": _CLOSURES,
    ".": "member access (a.b) has no equivalent: a variable is an External metric's value, a number",
    ";": "several statements (;) have no equivalent: a formula is one expression",
    "=": "assignment has no equivalent: a formula is one expression",
    "|": "pipes (|) have no equivalent: call the function, f(a)",
    "'": "strings have no equivalent: a formula computes a number",
    '"': "strings have no equivalent: a formula computes a number",
    "`": "strings have no equivalent: a formula computes a number",
}
# CEL's precedences of what is written back (a higher number binds tighter).
_CEL_LEVEL = {"?:": 1, "||": 2, "&&": 3, "==": 4, "!=": 4, "<": 4, ">": 4, "<=": 4, ">=": 4, "+": 5, "-": 5}
_CEL_LEVEL.update({"*": 6, "/": 6})
_UNARY_LEVEL = 7
_ATOM_LEVEL = 8


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # number, name, op, end
    text: str
    position: int


def _tokens(formula: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(formula):
        if formula[position:].strip() == "":
            break
        match = _TOKEN.match(formula, position)
        if match is None or match.lastgroup is None:
            start = len(formula) - len(formula[position:].lstrip())
            raise _Refused(f"unexpected character {formula[start]!r}", start)
        kind = match.lastgroup
        text = match.group(kind)
        start = match.start(kind)
        if kind == "op" and text in _REFUSED_OPERATORS:
            raise _Refused(_REFUSED_OPERATORS[text], start)
        if kind == "name" and text in ("let", "if", "nil"):  # said before what follows them
            raise _Refused(_REFUSED_WORDS[text], start)
        tokens.append(_Token(kind, text, start))
        position = match.end()
    tokens.append(_Token("end", "", len(formula)))
    return tokens


class _Parser:
    """expr-lang's grammar for what formulas use (precedence climbing, as its parser does); each
    ``expression`` returns (CEL text, CEL level of its outermost operation)."""

    def __init__(self, formula: str) -> None:
        self.tokens = _tokens(formula)
        self.index = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        token = self.token
        self.index += 1
        return token

    def expect(self, text: str) -> None:
        if self.token.text != text:
            raise _Refused(f"expected {text!r}", self.token.position)
        self.advance()

    def operator(self) -> str | None:
        token = self.token
        if token.kind == "op" and token.text in _BINARY:
            return token.text
        if token.kind == "name":
            if token.text in _WORD_OPERATORS:
                return _WORD_OPERATORS[token.text]
            if token.text in _REFUSED_WORDS:
                raise _Refused(_REFUSED_WORDS[token.text], token.position)
        return None

    def conditional(self) -> tuple[str, int]:
        condition = self.expression(0)
        if self.token.text != "?":
            return condition
        self.advance()
        when_true = self.conditional()
        self.expect(":")
        when_false = self.conditional()
        text = f"{_wrap(condition, _CEL_LEVEL['||'])} ? {_wrap(when_true, _CEL_LEVEL['||'])} : {when_false[0]}"
        return text, _CEL_LEVEL["?:"]

    def expression(self, minimum: int) -> tuple[str, int]:
        left = self.unary()
        while True:
            operator = self.operator()
            if operator is None:
                return left
            precedence, right_associative = _BINARY[operator]
            if precedence < minimum:
                return left
            self.advance()
            right = self.expression(precedence if right_associative else precedence + 1)
            left = _binary(operator, left, right)

    def unary(self) -> tuple[str, int]:
        token = self.token
        if token.text in ("!", "not") and token.kind in ("op", "name"):
            self.advance()
            operand = self.expression(50)  # expr's unary not binds at 50
            return f"!{_wrap(operand, _UNARY_LEVEL)}", _UNARY_LEVEL
        if token.kind == "op" and token.text in ("-", "+"):
            self.advance()
            operand = self.expression(90)  # expr's unary minus binds at 90: -x ** 2 is -(x ** 2)
            if token.text == "+":
                return operand
            return f"-{_wrap(operand, _UNARY_LEVEL)}", _UNARY_LEVEL
        return self.primary()

    def primary(self) -> tuple[str, int]:
        token = self.advance()
        if token.kind == "number":
            return _number(token.text), _ATOM_LEVEL
        if token.kind == "op" and token.text == "(":
            inner = self.conditional()
            self.expect(")")
            return f"({inner[0]})", _ATOM_LEVEL
        if token.kind == "op" and token.text == "[":
            items = self.arguments("]")
            return f"[{', '.join(items)}]", _ATOM_LEVEL
        if token.kind == "name":
            if token.text in _REFUSED_WORDS:
                raise _Refused(_REFUSED_WORDS[token.text], token.position)
            if token.text in ("true", "false"):
                return token.text, _ATOM_LEVEL
            if self.token.text == "(":
                return self.call(token), _ATOM_LEVEL
            if self.token.text == ".":
                raise _Refused(_REFUSED_OPERATORS["."], self.token.position)
            return token.text, _ATOM_LEVEL
        if token.kind == "end":
            raise _Refused("the formula ends where a value was expected", token.position)
        raise _Refused(f"unexpected {token.text!r}", token.position)

    def call(self, name: _Token) -> str:
        self.expect("(")
        if name.text not in FUNCTIONS:
            raise _Refused(
                f'function "{name.text}" has no equivalent (the functions: {", ".join(sorted(FUNCTIONS))})',
                name.position,
            )
        return f"{name.text}({', '.join(self.arguments(')'))})"

    def arguments(self, closing: str) -> list[str]:
        items: list[str] = []
        while self.token.text != closing:
            items.append(self.conditional()[0])
            if self.token.text != ",":
                break
            self.advance()
        self.expect(closing)
        return items


def _number(text: str) -> str:
    digits = text.replace("_", "")
    if digits[:2].lower() == "0x":
        return str(int(digits, 16))
    if digits.startswith("."):
        return "0" + digits
    if digits.endswith("."):
        return digits + "0"
    return digits


def _wrap(operand: tuple[str, int], level: int) -> str:
    text, operand_level = operand
    return text if operand_level >= level else f"({text})"


def _binary(operator: str, left: tuple[str, int], right: tuple[str, int]) -> tuple[str, int]:
    if operator in ("**", "^"):
        return f"pow({left[0]}, {right[0]})", _ATOM_LEVEL
    level = _CEL_LEVEL[operator]
    # CEL's comparisons do not chain (a < b < c is no formula either way); the right side of a
    # left-associative operation is parenthesized at its own level: a - (b - c) stays so.
    return f"{_wrap(left, level)} {operator} {_wrap(right, level + 1)}", level


def keda_formula_to_cel(formula: str) -> Converted:
    """KEDA's ``formula`` as this autoscaler's, or why it cannot be (with the position, from 1)."""
    try:
        parser = _Parser(formula)
        text, _ = parser.conditional()
        if parser.token.kind != "end":
            raise _Refused(f"unexpected {parser.token.text!r}", parser.token.position)
    except _Refused as refused:
        return Converted(None, f"{refused} (at character {refused.position + 1} of {formula!r})")
    return Converted(text)
