"""The part of Go's ``text/template`` that prometheus-adapter's templates use, with its ``<<``/``>>``
delimiters: field references (``<<.Series>>``, ``<< .GroupBy >>``) and the whitespace-trimming
markers (``<<-`` and ``->>``). Anything else (``range``, ``index``, pipelines) is refused with a
:class:`TemplateProblem` rather than guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_ACTION = re.compile(r"<<(-\s)?(.*?)(\s-)?>>", re.S)
_FIELD = re.compile(r"^\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*$")


class TemplateProblem(ValueError):
    """The template uses something this reading of Go templates does not support."""


def fields_used(template: str) -> list[str]:
    """The fields a template refers to, in order (raises :class:`TemplateProblem`)."""
    names = []
    for match in _ACTION.finditer(template):
        field = _FIELD.match(match.group(2))
        if field is None:
            raise TemplateProblem(
                f"the template action <<{match.group(2).strip()}>> is not a plain field "
                "reference such as <<.Series>>, which is all the converter reads"
            )
        names.append(field.group(1))
    return names


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill each ``<<.Field>>`` with ``values[Field]``; a field not in ``values`` is a problem."""
    fields_used(template)
    out: list[str] = []
    position = 0
    for match in _ACTION.finditer(template):
        before = template[position : match.start()]
        if match.group(1):
            before = before.rstrip()
        out.append(before)
        name = _FIELD.match(match.group(2))
        assert name is not None
        if name.group(1) not in values:
            raise TemplateProblem(
                f"<<.{name.group(1)}>> has no value here (known: {', '.join('.' + k for k in values)})"
            )
        out.append(values[name.group(1)])
        position = match.end()
        if match.group(3):
            rest = template[position:]
            position += len(rest) - len(rest.lstrip())
    out.append(template[position:])
    return "".join(out)
