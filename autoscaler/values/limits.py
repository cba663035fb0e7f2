"""Depth and size limits on documents read from outside: files and objects from the API server.

Every parser below walks documents recursively, and so do ``json.dumps``, copies and comparisons: a
document nested a thousand levels deep would end any of them with ``RecursionError``, and YAML aliases
can make a small file stand for a billion values. So each document is first checked here, without
recursion, and refused with a path-precise :class:`~autoscaler.values.fields.FieldError` when it is too
deep, too large, or holds something JSON cannot (a key that is not a string, binary data, a date).

The limits are far above anything real: the deepest field a target, a scenario or the settings
define is about 10 levels down; the largest shipped scenario has a few thousand values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autoscaler.values.fields import ErrorList, type_name

MAX_DEPTH = 32  # levels of objects and lists, the document itself being level 1
MAX_VALUES = 1_000_000  # values of every kind, counted as if YAML aliases were written out
MAX_FILE_BYTES = 8 * 1024 * 1024  # a file read by the command line (a scenario, a targets file, settings)
MAX_KEY_LENGTH = 1024  # characters in one object key (field names and label keys are far shorter)

_SCALARS = (str, int, float, bool, type(None))


def join_path(path: str, key: str) -> str:
    """``path.key``, with a key shortened when it would make the path unreadable."""
    shown = key if len(key) <= 80 else f"{key[:40]}…{key[-20:]}"
    return f"{path}.{shown}" if path else shown


def check_document(
    value: object,
    path: str,
    errors: ErrorList,
    *,
    level: int = 1,
    max_depth: int = MAX_DEPTH,
    max_values: int = MAX_VALUES,
) -> bool:
    """Add an error for each place where ``value`` breaks a limit; True when it breaks none.

    ``level`` is the level of ``value`` itself: 1 for a whole document, 2 for an object's ``spec``.

    The walk uses its own stack, so the document's depth cannot exhaust Python's; and it counts
    values as it goes, so a document of shared references (YAML aliases) costs at most
    ``max_values`` steps however large it would be written out.
    """
    return _within_limits(value, level, max_depth, max_values) or _check_with_paths(
        value, path, errors, level, max_depth, max_values
    )


def _check_with_paths(value: object, path: str, errors: ErrorList, level: int, max_depth: int, max_values: int) -> bool:
    """:func:`check_document`'s walk that names every problem with its path."""
    before = len(errors.items)
    count = 0
    stack: list[tuple[Any, str, int]] = [(value, path, level)]
    while stack:
        node, where, depth = stack.pop()
        count += 1
        if count > max_values:
            errors.add(
                path or "(document)",
                f"too large: more than {max_values:,} values (lists, objects and "
                f"scalars, counted with YAML aliases written out)",
            )
            return False
        if isinstance(node, _SCALARS):
            continue
        if isinstance(node, Mapping | list | tuple) and depth > max_depth:
            errors.add(where or "(document)", f"nested too deeply: more than {max_depth} levels of objects and lists")
            continue
        if isinstance(node, Mapping):
            children: list[tuple[Any, str, int]] = []
            for key, child in node.items():
                if not isinstance(key, str):
                    errors.add(where or "(document)", f"a key must be a string, not {type_name(key)} ({key!r:.40})")
                    continue
                if len(key) > MAX_KEY_LENGTH:
                    errors.add(
                        join_path(where, key), f"key too long: {len(key):,} characters (at most {MAX_KEY_LENGTH:,})"
                    )
                    continue
                children.append((child, join_path(where, key), depth + 1))
            stack.extend(reversed(children))  # popped in document order
        elif isinstance(node, list | tuple):
            stack.extend((child, f"{where}[{index}]", depth + 1) for index, child in reversed(list(enumerate(node))))
        else:
            errors.add(
                where or "(document)",
                f"unsupported value of type {type_name(node)}: only objects, lists, "
                f"strings, numbers, booleans and null",
            )
    return len(errors.items) == before


def _within_limits(value: object, level: int, max_depth: int, max_values: int) -> bool:
    """Whether ``value`` breaks no limit: :func:`check_document`'s walk without the paths, which only a
    problem needs (every status write comes back through the target watch and is checked; building a
    path for every value was most of that check's cost). False sends the caller to the full walk."""
    count = 0
    stack: list[tuple[Any, int]] = [(value, level)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > max_values:
            return False
        if isinstance(node, _SCALARS):
            continue
        if isinstance(node, Mapping):
            if depth > max_depth:
                return False
            for key, child in node.items():
                if not isinstance(key, str) or len(key) > MAX_KEY_LENGTH:
                    return False
                stack.append((child, depth + 1))
        elif isinstance(node, list | tuple):
            if depth > max_depth:
                return False
            stack.extend((child, depth + 1) for child in node)
        else:
            return False
    return True
