"""``autoscaler scenario``: a scenario for ``autoscaler simulate`` from one target's syncs in a recording
of ``autoscaler run --record FILE`` (docs/simulate.md, "Replaying a recording")."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from autoscaler.cli.errors import EXIT_FAILED, EXIT_INVALID, EXIT_OK, fail

if TYPE_CHECKING:
    from autoscaler.cli.parser import Subcommands


def add_parser(sub: Subcommands) -> None:
    scenario = sub.add_parser(
        "scenario",
        help="turn a target's recorded syncs (autoscaler run --record) into a scenario",
        description="Write a scenario that `autoscaler simulate` replays with exactly the decisions the service "
        "made: the syncs of one target in a recording of `autoscaler run --record FILE`.",
    )
    scenario.add_argument(
        "--from-recording",
        required=True,
        metavar="FILE",
        dest="recording",
        help="the JSON lines `autoscaler run --record FILE` wrote",
    )
    scenario.add_argument(
        "--target", required=True, metavar="NAMESPACE/NAME", help="the recorded target whose syncs to write"
    )
    scenario.add_argument("--output", "-o", metavar="FILE", help="write the scenario here (default: standard output)")
    scenario.set_defaults(func=cmd_scenario)


def cmd_scenario(args: argparse.Namespace) -> int:
    from autoscaler.simulate.recording import RecordingError, read_lines, scenario_from_recording
    from autoscaler.values.yaml_files import dump_yaml

    try:
        with open(args.recording, encoding="utf-8") as handle:
            lines = read_lines(handle.read(), args.recording)
        scenario = scenario_from_recording(lines, args.target)
    except OSError as exc:
        return fail("scenario", f"{args.recording}: cannot read it: {exc.strerror or exc}", EXIT_INVALID)
    except RecordingError as exc:
        return fail("scenario", f"{args.recording}: {exc}", EXIT_INVALID)
    text = (
        f"# {args.target}: {len(scenario['steps'])} syncs recorded by autoscaler run --record "
        f"({args.recording})\n" + dump_yaml(scenario)
    )
    if not args.output:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        return fail("scenario", f"--output {args.output}: cannot write it: {exc.strerror or exc}", EXIT_FAILED)
    return EXIT_OK
