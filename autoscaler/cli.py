"""The ``autoscaler`` command line."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from autoscaler.backtest.arguments import add_parser as add_backtest_parser
from autoscaler.convert.arguments import add_parser as add_convert_parser
from autoscaler.core.fields import SpecError, problem_report
from autoscaler.files import load_yaml_file
from autoscaler.sandbox.demo import add_parser as add_demo_parser
from autoscaler.service.cli import add_parsers as add_service_parsers

EXIT_INVALID = 2


def _print_errors(source: str, error: SpecError) -> None:
    print(problem_report(source, error), file=sys.stderr)


def cmd_simulate(args: argparse.Namespace) -> int:
    from autoscaler.plot.output import PlotError, check_outputs
    from autoscaler.simulate.output import render_table, step_json
    from autoscaler.simulate.runner import run_scenario
    from autoscaler.simulate.scenario import parse_scenario

    try:
        check_outputs(args.plot)  # before any work: a missing plot library is said up front
    except PlotError as exc:
        print(f"autoscaler simulate: {exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        scenario = parse_scenario(load_yaml_file(args.scenario))
    except SpecError as exc:
        _print_errors(args.scenario, exc)
        return EXIT_INVALID
    if scenario.spec.hvpa is not None:
        for warning in scenario.spec.hvpa.warnings:
            print(f"{args.scenario}: warning: {warning}", file=sys.stderr)
    results = run_scenario(scenario)
    if args.output == "json":
        for result in results:
            print(json.dumps(step_json(result), sort_keys=False))
    else:
        print(render_table(results, explain=args.explain))
    if args.plot:
        try:
            _plot_simulation(args.scenario, scenario.spec, results, args.plot)
        except PlotError as exc:  # checked up front; this is the disk failing meanwhile
            print(f"autoscaler simulate: {exc}", file=sys.stderr)
            return 1
    return 0


def _plot_simulation(source: str, spec: Any, results: list[Any], paths: list[str]) -> None:
    from autoscaler.plot.output import write_plots
    from autoscaler.plot.records import step_record
    from autoscaler.plot.series import PlotRun, plot_data

    data = plot_data([PlotRun(source, [step_record(r.at, r.outcome) for r in results], spec)],
                     f"Simulation of {source}", absolute_times=False)
    write_plots(paths, data)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoscaler",
        description="External Kubernetes autoscaler: upstream-exact HPA decisions from Prometheus, plus HVPA.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    simulate = sub.add_parser("simulate", help="replay a scenario file through the decision engine",
                              description="Replay a scenario file through the decision engine and print "
                                          "each step's decision.")
    simulate.add_argument("scenario", metavar="SCENARIO.yaml")
    simulate.add_argument("--output", "-o", choices=("table", "json"), default="table",
                          help="table (default) or json: one JSON object per step")
    simulate.add_argument("--explain", action="store_true", help="print each decision's explanation under its row")
    simulate.add_argument("--plot", action="append", default=[], metavar="FILE",
                          help="write a plot: FILE.png and/or FILE.html (repeatable; needs the plot extra)")
    simulate.set_defaults(func=cmd_simulate)
    add_backtest_parser(sub)
    add_convert_parser(sub)
    add_service_parsers(sub)
    add_demo_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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


EXIT_BROKEN_PIPE = 1  # Python's own exit code on EPIPE


def _discard_standard_output() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        # A stream without a file descriptor (a test's capture) flushes to no pipe at exit.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
