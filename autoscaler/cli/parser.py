"""The argument parser every command gets: argparse's, and a value may start with a dash where a
command says so.

``--from -2h`` is a time two hours ago, but argparse reads an argument that starts with ``-`` as an
option unless it looks like a negative number, so ``-2h`` would leave ``--from`` without its value. A
command names the options that take such values (``dash_values``); before argparse parses, each of
them followed by a negative number or a duration (``-2h``, ``-1d12h``, ``-0.5``) is joined with it into
the one argument ``--from=-2h``, which argparse reads as option and value, as documented. Nothing else
changes: another value that starts with a dash is still an option, and ``--`` still ends the options.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

# A negative number or a negative Prometheus duration: -5, -0.5, -2h, -1d12h, -500ms.
DASH_VALUE = re.compile(r"^-(\d+(\.\d+)?|(\d+(ms|[ywdhms]))+)$")


class CommandParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` for one command; ``dash_values`` are the options whose value may
    be a negative number or duration given as the next argument."""

    def __init__(self, *args: Any, dash_values: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dash_values = tuple(dash_values)

    def parse_known_args(self, args: Iterable[str] | None = None, namespace: Any = None) -> tuple[Any, list[str]]:
        # The parent parser hands a command's arguments over through this public method.
        if args is not None and self.dash_values:
            args = join_dash_values(list(args), self.dash_values, abbreviations=self.allow_abbrev)
        return super().parse_known_args(args, namespace)


class CommandsParser(argparse.ArgumentParser):
    """The top-level parser: an argument no command knows is reported with that command's usage
    (``autoscaler run --bogus`` prints ``usage: autoscaler run …``), not with the list of commands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: Mapping[str, argparse.ArgumentParser] = {}

    def add_commands(self, **kwargs: Any) -> Subcommands:
        subcommands: Subcommands = self.add_subparsers(**kwargs)
        self.commands = subcommands.choices
        return subcommands

    def parse_args(self, args: Iterable[str] | None = None, namespace: Any = None) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # argparse would report them with the top-level usage
            command = self.commands.get(getattr(parsed, "command", None) or "")
            (command or self).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def join_dash_values(args: Sequence[str], options: Sequence[str], *, abbreviations: bool = True) -> list[str]:
    """``args`` with each of ``options`` (or, with ``abbreviations``, a prefix of one, as argparse accepts)
    joined to a following negative number or duration: ``["--from", "-2h"]`` → ``["--from=-2h"]``."""
    joined: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":  # what follows is never an option
            joined.extend(args[index:])
            break
        names_option = arg in options or (
            abbreviations
            and arg.startswith("--")
            and len(arg) > 2
            and "=" not in arg
            and any(o.startswith(arg) for o in options)
        )
        if names_option and index + 1 < len(args) and DASH_VALUE.match(args[index + 1]):
            joined.append(f"{arg}={args[index + 1]}")
            index += 2
        else:
            joined.append(arg)
            index += 1
    return joined


if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[CommandParser]
