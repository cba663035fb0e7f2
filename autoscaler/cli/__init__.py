"""The ``autoscaler`` command line: :func:`main`, and a module per command.

Each command's module adds its parser (``add_parser``) and runs it (``cmd_<name>``): :mod:`.run`,
:mod:`.explain`, :mod:`.simulate`, :mod:`.backtest`, :mod:`.convert`, :mod:`.scenario`, :mod:`.demo`.
Building the parser imports none of the work behind a command: each loads what it needs when it runs.
Every command exits with the codes of :mod:`.errors` (2 for bad input) and reports problems through it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Sequence

from autoscaler.cli import backtest, convert, demo, explain, run, scenario, simulate
from autoscaler.cli.errors import EXIT_BROKEN_PIPE
from autoscaler.cli.parser import CommandParser, CommandsParser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = CommandsParser(
        prog="autoscaler",
        description="External Kubernetes autoscaler: upstream-exact HPA decisions from Prometheus, plus HVPA.",
    )
    sub = parser.add_commands(dest="command", required=True, metavar="COMMAND", parser_class=CommandParser)
    for command in (simulate, backtest, convert, run, explain, scenario, demo):  # the order `autoscaler --help` lists
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
        sys.stdout.flush()  # a reader that went away is found out here, not at exit
    except BrokenPipeError:
        # `autoscaler simulate … | head -1`: the reader has what it wanted. End quietly, as Python's
        # documentation recommends (signal.html, "Note on SIGPIPE"): what is still buffered goes to
        # /dev/null instead of raising again when the interpreter flushes at exit.
        _discard_standard_output()
        return EXIT_BROKEN_PIPE
    return result


def _discard_standard_output() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        # A stream without a file descriptor (a test's capture) flushes to no pipe at exit.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
