"""The ``backtest`` command's arguments. Kept apart from the command itself so that building the
``autoscaler`` parser imports nothing heavy (the replay and the Prometheus client load on use)."""

from __future__ import annotations

import argparse
import re
from typing import Any

# Prometheus refuses a range query with more points than this per series.
MAX_POINTS_PER_QUERY = 11_000
# Syncs per chunk of history: 4 h at the default 15 s. Memory grows with this times the series read.
DEFAULT_CHUNK_POINTS = 960
DEFAULT_TIMEOUT = 60.0


_NEGATIVE_VALUE = re.compile(r"^-(\d+(\.\d+)?|(\d+(ms|[ywdhms]))+)$")


def _command(args: argparse.Namespace) -> int:
    from autoscaler.backtest.command import cmd_backtest

    return cmd_backtest(args)


def add_parser(sub: Any) -> None:
    """Add ``backtest`` to the ``autoscaler`` command's subparsers."""
    parser = sub.add_parser(
        "backtest", help="replay a target spec against Prometheus history",
        description="Replay TARGET.yaml through the service's decision engine over the history Prometheus holds "
                    "for its workload, and report what the spec would have done (docs/backtest.md).")
    parser.add_argument("target", metavar="TARGET.yaml", nargs="?",
                        help="a target spec, or a ScalingTarget object (with --demo: optional, and it must scale "
                             "Deployment shop/web)")
    parser.add_argument("--demo", action="store_true",
                        help="nothing to set up: a synthetic day of history for Deployment shop/web in a private "
                             "Prometheus (needs the prometheus and promtool binaries); without TARGET.yaml, the spec "
                             "that scaled it is compared with a proposed one")
    parser.add_argument("--prometheus", metavar="URL", help="where Prometheus answers (or prometheus.url in --config)")
    parser.add_argument("--from", dest="start", metavar="T1",
                        help="start (required but with --demo): RFC 3339 (2024-05-07T09:00:00Z), a date, Unix "
                             "seconds, now, or -2h / now-1d")
    parser.add_argument("--to", dest="end", default="now", metavar="T2", help="end, in the same forms (default now)")
    parser.add_argument("--step", metavar="DURATION",
                        help="the sync period replayed, a Prometheus duration (default: sync.periodSeconds of "
                             "--config, else 15s)")
    parser.add_argument("--compare", metavar="OTHER.yaml", help="also replay this spec over the same history")
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text",
                        help="text (default): a summary to read; json: one object for scripts")
    parser.add_argument("--plot", action="append", default=[], metavar="FILE",
                        help="write a plot: FILE.png and/or FILE.html (repeatable; needs the plot extra)")
    parser.add_argument("--config", metavar="SETTINGS.yaml",
                        help="the service's settings file: its prometheus section (auth, TLS, labels, queries) "
                             "and controller settings are used")
    parser.add_argument("--namespace", help="the target's namespace (default: metadata.namespace, else default)")
    parser.add_argument("--name", help="the target's name, for <<name>> (default: metadata.name, else the "
                                       "scale target's name)")
    parser.add_argument("--selector", help="the scale's label selector, for queries that use <<selector>>")
    parser.add_argument("--pods-query", metavar="PROMQL",
                        help="PromQL listing the workload's pods (label pod) instead of kube-state-metrics ownership")
    parser.add_argument("--replicas-query", metavar="PROMQL",
                        help="PromQL giving the workload's real replica count (default: kube-state-metrics)")
    parser.add_argument("--initial-replicas", type=int, metavar="N",
                        help="replicas at --from (default: the workload's real count then)")
    parser.add_argument("--pod-startup", default="0s", metavar="DURATION",
                        help="how long a pod the replay adds stays Pending before it is Running and Ready (default 0s)")
    parser.add_argument("--chunk", metavar="DURATION",
                        help=f"history fetched and replayed at a time (default {DEFAULT_CHUNK_POINTS} syncs; "
                             f"at most {MAX_POINTS_PER_QUERY:,})")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"deadline of one range query (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    # Let "--from -2h" through: argparse takes a value starting with "-" for an option unless it
    # looks like a negative number, so durations are made to look like one here.
    parser._negative_number_matcher = _NEGATIVE_VALUE
    parser.set_defaults(func=_command)
