"""``autoscaler convert --compare``: each converted target backtested beside the old autoscaler's recorded
decisions (:mod:`autoscaler.convert.compare`), and the report.

Each target is compared on its own: one that cannot be (no recorded history of its workload, a query
Prometheus rejects) is reported by name, on stdout in the report and on stderr, and the others still
compare. Exit code: 2 when a target could not be compared for bad input (a query Prometheus rejects); 1 when a
target is flagged (below ``--agreement``, a metric never read in the replay, no recorded decision, or no
history to compare); else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from autoscaler.cli.backtest import read_settings  # --compare is a backtest, with its settings
from autoscaler.cli.errors import EXIT_FAILED, EXIT_INVALID, EXIT_OK, fail, say
from autoscaler.values.fields import SpecError

if TYPE_CHECKING:
    from autoscaler.backtest.replay import BacktestOptions
    from autoscaler.convert.compare import Comparison, NotCompared
    from autoscaler.convert.model import Conversion
    from autoscaler.prometheus.client import PrometheusClient
    from autoscaler.service.settings import ServiceSettings

__all__ = ["EXIT_DISAGREES", "HPA_SYNC_PERIOD", "run_compare"]

EXIT_DISAGREES = EXIT_FAILED  # --compare flags a target
HPA_SYNC_PERIOD = "15s"  # the controller's --horizontal-pod-autoscaler-sync-period default


def _fail(message: str) -> int:
    return fail("convert", message)


def run_compare(args: argparse.Namespace, conversions: list[Conversion]) -> int:
    """Compare every converted target in ``conversions``; the exit code (see the module's docstring)."""
    from autoscaler.backtest.replay import BacktestError, BacktestOptions
    from autoscaler.cli.times import TimeError, parse_step, parse_time

    try:
        settings = read_settings(args)
    except SpecError as exc:
        return _fail("settings: " + "; ".join(str(e) for e in exc.errors))
    now = time.time()
    try:
        start, end = parse_time(args.start, now), parse_time(args.end, now)
        step = parse_step(args.step or HPA_SYNC_PERIOD)
    except TimeError as exc:
        return _fail(str(exc))
    if end <= start or start > now:
        return _fail(f"--from {args.start} → --to {args.end}: not a range of past time")
    threshold = args.agreement / 100
    if not 0 <= threshold <= 1 or math.isnan(threshold):
        return _fail("--agreement is a percentage between 0 and 100")
    options = BacktestOptions(start=start, end=end, step=step, keep_records=bool(args.plot_dir))
    try:
        comparisons = asyncio.run(_compare_all(settings, conversions, options, own_step=not args.step))
    except BacktestError as exc:
        return fail("convert --compare", str(exc), exc.exit_code)
    return _report(args, comparisons, threshold)


async def _compare_all(
    settings: ServiceSettings, conversions: list[Conversion], options: BacktestOptions, *, own_step: bool
) -> list[Comparison | NotCompared]:
    """Each conversion compared on its own. ``own_step``: a target with syncPeriodSeconds replays at it (no
    --step was given)."""
    from autoscaler.backtest.replay import BacktestError
    from autoscaler.prometheus.client import PrometheusClient
    from autoscaler.prometheus.errors import PrometheusError

    try:
        async with PrometheusClient(settings.prometheus) as client:
            return [await _compare_one(client, settings, c, options, own_step=own_step) for c in conversions]
    except PrometheusError as error:  # the client could not start (a TLS or token file): no target compares
        raise BacktestError(f"reading the history failed: {error}", 2 if error.kind == "bad_query" else 1) from None


async def _compare_one(
    client: PrometheusClient,
    settings: ServiceSettings,
    conversion: Conversion,
    options: BacktestOptions,
    *,
    own_step: bool,
) -> Comparison | NotCompared:
    """One target's comparison, or why it could not be made (the others still compare)."""
    from autoscaler.backtest.replay import BacktestError, NoHistoryAtStart
    from autoscaler.convert.compare import NotCompared, compare
    from autoscaler.prometheus.errors import PrometheusError

    assert conversion.target is not None
    period = (conversion.target.get("spec") or {}).get("syncPeriodSeconds")
    if own_step and isinstance(period, int) and not isinstance(period, bool) and period >= 1:
        options = replace(options, step=float(period))
    try:
        return await compare(client, settings.prometheus, settings.controller, conversion, options)
    except NoHistoryAtStart as exc:  # this target's history is not there: the others may well be
        return NotCompared(conversion, str(exc), EXIT_FAILED)
    except BacktestError as exc:
        return NotCompared(conversion, str(exc), exc.exit_code)
    except PrometheusError as error:
        return NotCompared(conversion, f"reading the history failed: {error}", 2 if error.kind == "bad_query" else 1)


def _report(args: argparse.Namespace, comparisons: list[Comparison | NotCompared], threshold: float) -> int:
    from autoscaler.convert.compare import NotCompared, comparison_json, render, write_plot
    from autoscaler.convert.output import file_name

    if args.output == "json":
        print(
            json.dumps(
                {"targets": [comparison_json(c, threshold) for c in comparisons], "agreementThreshold": threshold},
                indent=2,
            )
        )
    else:
        print("\n\n".join(render(c, threshold) for c in comparisons))
    if args.plot_dir:
        directory = Path(args.plot_dir)
        directory.mkdir(parents=True, exist_ok=True)
        for comparison in comparisons:
            if not isinstance(comparison, NotCompared):
                write_plot(comparison, [str(directory / file_name(comparison.conversion).replace(".yaml", ".png"))])
    not_compared = [c for c in comparisons if isinstance(c, NotCompared)]
    for skipped in not_compared:  # on stderr too: the report may be JSON on stdout
        say("convert --compare", f"{skipped.conversion.origin.label}: not compared: {skipped.message}")
    if any(c.exit_code == EXIT_INVALID for c in not_compared):
        return EXIT_INVALID
    return EXIT_DISAGREES if any(c.flagged(threshold) for c in comparisons) else EXIT_OK
