"""``autoscaler simulate``: replay a scenario file through the decision engine (docs/simulate.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from autoscaler.cli.errors import EXIT_FAILED, EXIT_OK, fail, invalid_file
from autoscaler.values.fields import SpecError

if TYPE_CHECKING:
    from autoscaler.cli.parser import Subcommands
    from autoscaler.simulate.scenario import Scenario


def add_parser(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "simulate",
        help="replay a scenario file through the decision engine",
        description="Replay a scenario file through the decision engine and print each "
        "step's decision (docs/simulate.md).",
    )
    parser.add_argument("scenario", metavar="SCENARIO.yaml", help="the scenario to replay (docs/simulate.md)")
    parser.add_argument(
        "--output",
        "-o",
        choices=("table", "json"),
        default="table",
        help="table (default) or json: one JSON object per step",
    )
    parser.add_argument("--explain", action="store_true", help="print each decision's explanation under its row")
    parser.add_argument(
        "--plot",
        action="append",
        default=[],
        metavar="FILE",
        help="write a plot: FILE.png and/or FILE.html (repeatable; needs the plot extra)",
    )
    parser.set_defaults(func=cmd_simulate)


def read_scenario(path: str) -> Scenario:
    """The scenario file at ``path``; SpecError lists every problem."""
    from autoscaler.simulate.scenario import parse_scenario
    from autoscaler.values.yaml_files import load_yaml_file

    return parse_scenario(load_yaml_file(path))


def cmd_simulate(args: argparse.Namespace) -> int:
    from autoscaler.plot.output import PlotError, check_outputs
    from autoscaler.simulate.output import render_table, step_json
    from autoscaler.simulate.runner import run_scenario

    try:
        check_outputs(args.plot)  # before any work: a missing plot library is said up front
    except PlotError as exc:
        return fail("simulate", str(exc))
    try:
        scenario = read_scenario(args.scenario)
    except SpecError as exc:
        return invalid_file(args.scenario, exc)
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
            _plot(args.scenario, scenario.spec, results, args.plot)
        except PlotError as exc:  # checked up front; this is the disk failing meanwhile
            return fail("simulate", str(exc), EXIT_FAILED)
    return EXIT_OK


def _plot(source: str, spec: Any, results: list[Any], paths: list[str]) -> None:
    from autoscaler.plot.output import write_plots
    from autoscaler.plot.records import step_record
    from autoscaler.plot.series import PlotRun, plot_data

    data = plot_data(
        [PlotRun(source, [step_record(r.at, r.outcome) for r in results], spec)],
        f"Simulation of {source}",
        absolute_times=False,
    )
    write_plots(paths, data)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
