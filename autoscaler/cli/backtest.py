"""``autoscaler backtest``: replay a target spec against Prometheus history (docs/backtest.md).

The command line around :func:`~autoscaler.backtest.replay.run_backtest`. Bad input (a spec, a time, a
step, a missing option) gets a clear message and exit code 2, never a traceback; history that cannot be
read gets exit code 1 (2 when Prometheus rejects a query).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoscaler.backtest.limits import DEFAULT_CHUNK_POINTS, MAX_POINTS_PER_QUERY
from autoscaler.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, fail, invalid_file
from autoscaler.cli.times import TimeError, parse_duration_option, parse_step, parse_time
from autoscaler.values.durations import format_seconds
from autoscaler.values.fields import SpecError
from autoscaler.values.timestamps import rfc3339_millis

if TYPE_CHECKING:  # the replay (aiohttp and all) is imported only when the command runs
    from collections.abc import Callable, Mapping
    from contextlib import AbstractContextManager

    from autoscaler.backtest.progress import Progress
    from autoscaler.backtest.replay import BacktestOptions, BacktestResult
    from autoscaler.backtest.target import BacktestTarget
    from autoscaler.cli.parser import Subcommands
    from autoscaler.service.settings import ServiceSettings

DEFAULT_TIMEOUT = 60.0  # seconds for one range query
MAX_TIMEOUT = 3600.0
MAX_SYNCS = 10_000_000  # a year at 3 s; more is a typo in --from/--to/--step
MAX_INT32 = 2**31 - 1  # replicas


def add_parser(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "backtest",
        help="replay a target spec against Prometheus history",
        dash_values=("--from", "--to", "--step", "--chunk", "--pod-startup"),  # --from -2h
        description="Replay TARGET.yaml through the service's decision engine over the history Prometheus holds "
        "for its workload, and report what the spec would have done (docs/backtest.md).",
    )
    parser.add_argument(
        "target",
        metavar="TARGET.yaml",
        nargs="?",
        help="a target spec, or a ScalingTarget object (with --demo or --demo-day: optional, and it must scale "
        "Deployment shop/web)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="nothing to set up: a week of request-rate history for Deployment shop/web with a morning ramp each "
        "day, in a private Prometheus (needs the prometheus and promtool binaries): the last four days replayed "
        "(the first three are the forecast's history), pods starting in 90s (unless --pod-startup says "
        "otherwise); without TARGET.yaml, a reactive spec is compared with the same spec predicting "
        "(spec.prediction, docs/prediction.md)",
    )
    parser.add_argument(
        "--demo-day",
        action="store_true",
        help="like --demo, with a day of history (CPU, pods, replicas as kube-state-metrics reports them); "
        "without TARGET.yaml, the spec that scaled it is compared with a proposed one",
    )
    parser.add_argument("--prometheus", metavar="URL", help="where Prometheus answers (or prometheus.url in --config)")
    parser.add_argument(
        "--from",
        dest="start",
        metavar="T1",
        help="start (required but with --demo): RFC 3339 (2024-05-07T09:00:00Z), a date, Unix "
        "seconds, now, or -2h / now-1d",
    )
    parser.add_argument("--to", dest="end", default="now", metavar="T2", help="end, in the same forms (default now)")
    parser.add_argument(
        "--step",
        metavar="DURATION",
        help="the sync period replayed, a Prometheus duration (default: the target's syncPeriodSeconds, else "
        "sync.periodSeconds of --config, else 15s)",
    )
    parser.add_argument("--compare", metavar="OTHER.yaml", help="also replay this spec over the same history")
    parser.add_argument(
        "--output",
        "-o",
        choices=("text", "json"),
        default="text",
        help="text (default): a summary to read; json: one object for scripts",
    )
    parser.add_argument(
        "--plot",
        action="append",
        default=[],
        metavar="FILE",
        help="write a plot: FILE.png and/or FILE.html (repeatable; needs the plot extra)",
    )
    parser.add_argument(
        "--config",
        metavar="SETTINGS.yaml",
        help="the service's settings file: its prometheus section (auth, TLS, labels, queries) "
        "and controller settings are used",
    )
    parser.add_argument("--namespace", help="the target's namespace (default: metadata.namespace, else default)")
    parser.add_argument(
        "--name", help="the target's name, for <<name>> (default: metadata.name, else the scale target's name)"
    )
    parser.add_argument("--selector", help="the scale's label selector, for queries that use <<selector>>")
    parser.add_argument(
        "--pods-query",
        metavar="PROMQL",
        help="PromQL listing the workload's pods (label pod) instead of kube-state-metrics ownership",
    )
    parser.add_argument(
        "--replicas-query",
        metavar="PROMQL",
        help="PromQL giving the workload's real replica count (default: kube-state-metrics)",
    )
    parser.add_argument(
        "--initial-replicas", type=int, metavar="N", help="replicas at --from (default: the workload's real count then)"
    )
    parser.add_argument(
        "--pod-startup",
        default="0s",
        metavar="DURATION",
        help="how long a replica the replay adds takes to serve: Pending until then, carrying no load; with more "
        "than 0s the replay's own start-up decides which of its pods serve, also a real pod it brings back "
        "(default 0s: added pods serve at once, real pods as the history shows them)",
    )
    parser.add_argument(
        "--chunk",
        metavar="DURATION",
        help=f"history fetched and replayed at a time (default {DEFAULT_CHUNK_POINTS} syncs; "
        f"at most {MAX_POINTS_PER_QUERY:,})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"deadline of one range query (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    parser.set_defaults(func=cmd_backtest)


def _fail(message: str) -> int:
    return fail("backtest", message)


def read_settings(args: argparse.Namespace) -> ServiceSettings:
    """The service's settings the backtest uses (--config, the environment, --prometheus); SpecError
    lists what is wrong, and has no errors when no Prometheus is named at all."""
    from autoscaler.service.settings import load_service_settings

    if args.prometheus is None and args.config is None and "AUTOSCALER_PROMETHEUS_URL" not in os.environ:
        raise SpecError([])
    flags: dict[tuple[str, ...], Any] = {("prometheus", "url"): args.prometheus} if args.prometheus else {}
    return load_service_settings(args.config, flags=flags)


def _options(
    args: argparse.Namespace, settings: ServiceSettings, now: float, own_period: int | None = None
) -> BacktestOptions:
    """Times, step and sizes from the command line; :class:`TimeError` if one is bad. ``own_period``: the
    target's ``syncPeriodSeconds`` (the step without ``--step``, before the service's period)."""
    from autoscaler.backtest.replay import BacktestOptions

    start = parse_time(args.start, now)
    end = parse_time(args.end, now)
    if args.step:
        step = parse_step(args.step)
    else:
        step = float(own_period) if own_period is not None else settings.sync.period_seconds
    if end <= start:
        raise TimeError(f"--to ({args.end}) must be later than --from ({args.start})")
    if start > now:
        raise TimeError(f"--from ({args.start}) is in the future: there is no history to replay yet")
    syncs = math.floor((end - start) / step) + 1
    if syncs > MAX_SYNCS:
        raise TimeError(
            f"{syncs:,} syncs from --from to --to every {format_seconds(step)}: at most {MAX_SYNCS:,} "
            "(use a longer --step or a shorter range)"
        )
    chunk_points = DEFAULT_CHUNK_POINTS
    if args.chunk:
        chunk = parse_step(args.chunk)
        chunk_points = max(1, min(MAX_POINTS_PER_QUERY, math.floor(chunk / step)))
    startup = 0.0 if args.pod_startup.strip() in ("0", "0s") else parse_duration_option(args.pod_startup)
    if startup is None:
        raise TimeError(f"--pod-startup {args.pod_startup!r} is not a duration (e.g. 30s, 2m)")
    if args.initial_replicas is not None and not 0 <= args.initial_replicas <= MAX_INT32:
        raise TimeError(f"--initial-replicas must be between 0 and {MAX_INT32}")
    if not 0 < args.timeout <= MAX_TIMEOUT:  # also false for NaN
        raise TimeError(f"--timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    return BacktestOptions(
        start=start,
        end=end,
        step=step,
        chunk_points=chunk_points,
        pod_startup=startup,
        initial_replicas=args.initial_replicas,
        selector=args.selector,
        pods_query=args.pods_query,
        replicas_query=args.replicas_query,
        keep_records=bool(args.plot),
    )


def _labels(targets: list[BacktestTarget]) -> list[str]:
    names = [Path(t.source).name for t in targets]
    if len(set(names)) < len(names):
        names = [f"{letter}: {name}" for letter, name in zip("AB", names, strict=False)]
    return names


def cmd_backtest(args: argparse.Namespace) -> int:
    from autoscaler.backtest.progress import Progress
    from autoscaler.backtest.replay import BacktestError
    from autoscaler.backtest.target import load_target
    from autoscaler.plot.output import PlotError, check_outputs
    from autoscaler.prometheus.backends import one_backend

    try:
        check_outputs(args.plot)
    except PlotError as exc:
        return _fail(str(exc))
    if args.demo and args.demo_day:
        return _fail("--demo and --demo-day: choose one (a week with a morning ramp, or a day)")
    if args.demo:
        return _demo(args)
    if args.demo_day:
        return _demo_day(args)
    if args.target is None:
        return _fail("TARGET.yaml is required (or --demo / --demo-day, which need nothing)")
    if args.start is None:
        return _fail("--from is required (or --demo / --demo-day, which replay their own history)")
    try:
        settings = read_settings(args)
    except SpecError as exc:
        if not exc.errors:
            return _fail("--prometheus URL is required (or --config with prometheus.url, or AUTOSCALER_PROMETHEUS_URL)")
        return invalid_file(args.config or "settings", exc)
    targets = []
    for path in (args.target, args.compare):
        if path is None:
            continue
        try:
            targets.append(load_target(path, namespace=args.namespace, name=args.name))
        except SpecError as exc:
            return invalid_file(path, exc)
    if len(targets) == 2:
        first, other = targets
        if (first.namespace, first.spec.scale_target_ref.kind, first.spec.scale_target_ref.name) != (
            other.namespace,
            other.spec.scale_target_ref.kind,
            other.spec.scale_target_ref.name,
        ):
            theirs, ours = other.spec.scale_target_ref, first.spec.scale_target_ref
            return _fail(
                f"--compare: {other.source} scales {theirs.kind} {other.namespace}/{theirs.name}, not "
                f"{ours.kind} {first.namespace}/{ours.name}: both must replay the same workload"
            )
    try:
        options = _options(args, settings, time.time(), targets[0].spec.sync_period_seconds)
    except TimeError as exc:
        return _fail(str(exc))
    # The replay reads one Prometheus: the backend the targets' metrics name (prometheus.backends), if one.
    backend = one_backend(
        settings.prometheus, settings.prometheus_backends, (m for t in targets for m in t.spec.metrics)
    )
    if isinstance(backend, str):
        return _fail(f"{backend} (--config's prometheus.backends)")
    prometheus = replace(backend, timeout_seconds=args.timeout)
    labels = _labels(targets)
    progress = Progress(
        math.floor((options.end - options.start) / options.step) + 1, enabled=False if args.no_progress else None
    )
    try:
        import asyncio  # loaded when a backtest runs, not for `autoscaler --help`

        result = asyncio.run(_run(prometheus, settings, targets, options, labels, progress))
    except BacktestError as exc:
        return fail("backtest", str(exc), exc.exit_code)
    except KeyboardInterrupt:
        print(file=sys.stderr)  # past the progress bar
        return fail("backtest", "interrupted", EXIT_INTERRUPTED)
    _print(result, args.output)
    if args.plot:
        try:
            _plot(result, args.plot)
        except PlotError as exc:  # checked up front; this is the disk failing meanwhile
            return fail("backtest", str(exc), EXIT_FAILED)
    return EXIT_OK


def _demo_day(args: argparse.Namespace) -> int:
    """``--demo-day``: the same backtest, against a private Prometheus holding a synthetic day."""
    refused = _demo_refused(args, "--demo-day", "day")
    if refused is not None:
        return refused
    from autoscaler_sandbox.backtest_demo import END, START, STEP, demo_prometheus, write_specs

    def describe(url: str, spec: Path) -> str:
        return (
            f"autoscaler backtest --demo-day: a synthetic day ({rfc3339_millis(START)} to {rfc3339_millis(END)}) of "
            f"Deployment shop/web, scaled by {spec.name}'s spec, in a private Prometheus at {url}"
        )

    replay = {"start": str(int(START)), "end": str(int(END)), "step": args.step or f"{STEP}s"}
    return _replay_demo(args, write_specs, demo_prometheus, describe, replay)


def _demo(args: argparse.Namespace) -> int:
    """``--demo``: a week of seasonal request-rate history in a private Prometheus; the last four days
    replayed, the reactive spec against the same spec predicting (docs/prediction.md)."""
    refused = _demo_refused(args, "--demo", "week")
    if refused is not None:
        return refused
    from autoscaler_sandbox.seasonal import POD_STARTUP, REPLAY_FROM, REPLAY_TO, STEP, week_prometheus, write_specs

    def describe(url: str, spec: Path) -> str:
        return (
            f"autoscaler backtest --demo: a synthetic week of Deployment shop/web's request rate, with a morning "
            f"ramp each day, scaled by {spec.name}'s spec, in a private Prometheus at {url}; replaying "
            f"{rfc3339_millis(REPLAY_FROM)} to {rfc3339_millis(REPLAY_TO)}"
        )

    replay = {
        "start": str(int(REPLAY_FROM)),
        "end": str(int(REPLAY_TO)),
        "step": args.step or f"{STEP}s",
        "pod_startup": args.pod_startup if args.pod_startup not in ("0", "0s") else f"{POD_STARTUP}s",
    }
    return _replay_demo(args, write_specs, week_prometheus, describe, replay)


def _demo_refused(args: argparse.Namespace, flag: str, history: str) -> int | None:
    """A demo's exit code when it cannot run: the sandbox not installed, or an option naming a Prometheus or a
    time range it brings itself."""
    from autoscaler.cli.demo import SANDBOX_MISSING, sandbox_installed

    if not sandbox_installed():
        return fail("backtest", f"{flag}: {SANDBOX_MISSING}", EXIT_FAILED)
    given = [
        option
        for option, value in (("--prometheus", args.prometheus), ("--config", args.config), ("--from", args.start))
        if value is not None
    ]
    if given or args.end != "now":
        return _fail(f"{flag} brings its own Prometheus and {history}: leave out {', '.join(given) or '--to'}")
    return None


def _replay_demo(
    args: argparse.Namespace,
    write_specs: Callable[[Path], tuple[Path, Path]],
    prometheus: Callable[[], AbstractContextManager[str]],
    describe: Callable[[str, Path], str],
    replay: Mapping[str, str],
) -> int:
    """A demo's backtest: its two specs written (the first replayed, the second compared, unless TARGET.yaml is
    given), its private Prometheus started, and the backtest run against it over ``replay``'s window."""
    import tempfile

    from autoscaler_sandbox.backtest_demo import DemoUnavailable
    from autoscaler_sandbox.prometheus import SandboxError

    with tempfile.TemporaryDirectory(prefix="autoscaler-backtest-demo-") as directory:
        first, second = write_specs(Path(directory))
        if args.target is None:
            args.target, args.compare = str(first), args.compare or str(second)
        try:
            with prometheus() as url:
                print(describe(url, first), file=sys.stderr)
                options = {**vars(args), "demo": False, "demo_day": False, "prometheus": url, **replay}
                return cmd_backtest(argparse.Namespace(**options))
        except DemoUnavailable as exc:
            return _fail(str(exc))
        except SandboxError as exc:
            return fail("backtest", f"the demo's Prometheus did not start: {exc}", EXIT_FAILED)


async def _run(
    prometheus: Any,
    settings: ServiceSettings,
    targets: list[BacktestTarget],
    options: BacktestOptions,
    labels: list[str],
    progress: Progress,
) -> BacktestResult:
    from autoscaler.backtest.replay import BacktestError, run_backtest
    from autoscaler.prometheus.client import PrometheusClient
    from autoscaler.prometheus.errors import PrometheusError

    try:
        async with PrometheusClient(prometheus) as client:
            return await run_backtest(
                client, prometheus, settings.controller, targets, options, labels=labels, progress=progress
            )
    except PrometheusError as error:  # e.g. an unreadable CA or token file, when the client starts
        raise BacktestError(str(error)) from None


def _print(result: BacktestResult, output: str) -> None:
    from autoscaler.backtest.compare import comparison_json, render_comparison
    from autoscaler.backtest.report import render_text, report_json

    reports = [run.report for run in result.runs]
    if output == "json":
        document: dict[str, Any] = (
            comparison_json(reports, result.divergence) if len(reports) > 1 else report_json(reports[0])
        )
        document["history"] = {"rangeQueries": result.stats.range_queries, "points": result.stats.points}
        print(json.dumps(document, indent=2))
    elif len(reports) > 1:
        print(render_comparison(reports, result.divergence))
    else:
        print(render_text(reports[0]))


def _plot(result: BacktestResult, paths: list[str]) -> None:
    from autoscaler.plot.output import write_plots
    from autoscaler.plot.series import PlotRun, plot_data

    first = result.runs[0].report
    title = f"Backtest of {first.namespace}/{first.name} ({first.workload})" + (
        f": {' vs '.join(r.label for r in result.runs)}" if len(result.runs) > 1 else ""
    )
    data = plot_data(
        [PlotRun(run.label, run.records or [], run.target.spec, run.forecast_lines) for run in result.runs],
        title,
        absolute_times=True,
    )
    write_plots(paths, data)
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
