"""The ``convert`` command's arguments (kept apart so that building the ``autoscaler`` parser imports
nothing heavy)."""

from __future__ import annotations

import argparse
import re
from typing import Any

DEFAULT_AGREEMENT = 90.0
_NEGATIVE_VALUE = re.compile(r"^-(\d+(\.\d+)?|(\d+(ms|[ywdhms]))+)$")


def _command(args: argparse.Namespace) -> int:
    from autoscaler.convert.command import cmd_convert

    return cmd_convert(args)


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "convert", help="convert HPAs (+ prometheus-adapter config) and KEDA ScaledObjects to ScalingTargets",
        description="Convert HorizontalPodAutoscalers, with prometheus-adapter's configuration, and KEDA "
                    "ScaledObjects into ScalingTargets; with --compare, backtest each over Prometheus history "
                    "beside what the old autoscaler did (docs/migrating.md).")
    parser.add_argument("files", nargs="*", metavar="FILE.yaml",
                        help="HPAs, ScaledObjects, prometheus-adapter's config file or ConfigMap (any mix, any "
                             "number of documents)")
    source = parser.add_argument_group("reading from a cluster")
    source.add_argument("--from-cluster", action="store_true",
                        help="read HPAs, ScaledObjects and the adapter's ConfigMap through the kubeconfig")
    source.add_argument("--kubeconfig", metavar="FILE")
    source.add_argument("--context")
    source.add_argument("-n", "--namespace", help="only this namespace (default: all)")
    source.add_argument("-l", "--selector", help="only HPAs and ScaledObjects with these labels (app=web,tier!=db)")
    source.add_argument("--adapter-configmap", metavar="NAMESPACE/NAME",
                        help="the adapter's ConfigMap (default: the one labelled "
                             "app.kubernetes.io/name=prometheus-adapter)")
    parser.add_argument("--adapter-config", metavar="FILE",
                        help="prometheus-adapter's configuration: its config file, or its ConfigMap")
    parser.add_argument("--output-dir", metavar="DIR", help="write one file per target here instead of stdout")
    parser.add_argument("--strict", action="store_true", help="anything that does not convert is an error (exit 2)")
    compare = parser.add_argument_group("proof before cut-over (--compare)")
    compare.add_argument("--compare", action="store_true",
                         help="backtest each converted target beside the old autoscaler's recorded decisions")
    compare.add_argument("--prometheus", metavar="URL",
                         help="Prometheus: which series exist (the adapter's rules are checked against it), and with "
                              "--compare the history")
    compare.add_argument("--from", dest="start", metavar="T1", help="start: -7d, RFC 3339, a date, Unix seconds")
    compare.add_argument("--to", dest="end", default="now", metavar="T2", help="end (default now)")
    compare.add_argument("--step", metavar="DURATION", help="the sync period replayed (default: the HPA's 15s)")
    compare.add_argument("--config", metavar="SETTINGS.yaml",
                         help="the service's settings (prometheus auth, TLS, labels; controller settings)")
    compare.add_argument("--agreement", type=float, default=DEFAULT_AGREEMENT, metavar="PERCENT",
                         help=f"flag a target whose replicas equal the old autoscaler's less than this share of "
                              f"the time (default {DEFAULT_AGREEMENT:g})")
    compare.add_argument("--plot-dir", metavar="DIR", help="write each target's backtest plot here (PNG)")
    compare.add_argument("--output", "-o", choices=("text", "json"), default="text", help="the comparison's form")
    parser._negative_number_matcher = _NEGATIVE_VALUE
    parser.set_defaults(func=_command)
