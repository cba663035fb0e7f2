"""``autoscaler demo``: the real service against an embedded sandbox, with a live timeline.

The service is :class:`autoscaler.service.app.Service`, unchanged: its reconcilers, its Prometheus
client and reader, its Kubernetes client and watch caches. What is synthetic is around it: the
Kubernetes API emulator (a Deployment whose pods start and become ready after realistic delays, a
VPA, the ScalingTarget CRD and one target) and a metrics source serving a load curve. Everything is
on loopback. Time is compressed by ``--speed`` (docs/demo.md says exactly how).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import TYPE_CHECKING, TextIO

from autoscaler.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, fail

if TYPE_CHECKING:  # the sandbox and the service load only when the command runs
    from autoscaler.cli.parser import Subcommands
    from autoscaler_sandbox.demo_run import DemoOptions
    from autoscaler_sandbox.timeline import Summary

DEFAULT_SPEED = 10
# The demo's sandbox (the API emulator, the metrics source) is test machinery: it ships with the source
# repository, not in the service's image.
SANDBOX_MISSING = (
    "the demo's sandbox (the packages autoscaler_sandbox and kube_emulator) is not installed: it ships "
    "with the source repository (pip install -e . in a clone), not in the service's container image"
)
# The API emulator's own dependencies are pyproject's ``emulator`` extra, which the service's install (and its
# image) leaves out: each module the emulator imports, and the package that holds it.
EMULATOR_EXTRA = "emulator"
EMULATOR_PACKAGES = {"jsonschema": "jsonschema", "fastjsonschema": "fastjsonschema", "google.protobuf": "protobuf"}


def missing_emulator_packages() -> list[str]:
    """The packages of the emulator extra that cannot be imported (absent, or broken), in the extra's order."""
    import importlib

    missing = []
    for module, package in EMULATOR_PACKAGES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    return missing


def emulator_missing(packages: list[str]) -> str:
    return (
        f"the demo runs the Kubernetes API emulator, which needs {', '.join(packages)} (the {EMULATOR_EXTRA} "
        f"extra): pip install 'autoscaler[{EMULATOR_EXTRA}]' (in a clone: pip install -e '.[{EMULATOR_EXTRA}]')"
    )


def sandbox_installed() -> bool:
    import importlib.util

    try:
        return all(importlib.util.find_spec(name) is not None for name in ("autoscaler_sandbox", "kube_emulator"))
    except ImportError:  # an import hook that refuses them
        return False


def add_parser(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "demo",
        help="watch the service scale a sandbox workload through a load curve (no cluster needed)",
        description="Run the real autoscaler service against an embedded sandbox (a Kubernetes API emulator "
        "and a synthetic Prometheus, both on loopback) through a load curve that rises, spikes "
        "and falls, printing each decision as it happens and a summary at the end (docs/demo.md).",
    )
    parser.add_argument(
        "--speed",
        type=int,
        default=DEFAULT_SPEED,
        metavar="N",
        help=f"run N times faster than real time (default {DEFAULT_SPEED}: the whole curve in about "
        "72 s); a divisor of 60, from 1 to 60",
    )
    parser.add_argument(
        "--duration",
        metavar="DURATION",
        help="demo time to run, e.g. 5m or 900 (default: the whole curve, 12m); past the curve's "
        "end the load stays at its last value",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the summary")
    parser.add_argument(
        "--prometheus",
        choices=("auto", "builtin", "binary"),
        default="builtin",
        help="builtin (default): a synthetic Prometheus API answering from the curve; binary: a "
        "real prometheus from PATH scraping the sandbox; auto: binary when installed",
    )
    parser.add_argument("--log", metavar="FILE", help="write the service's own log (JSON lines) to FILE")
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="where to write the sandbox's kubeconfig for kubectl (default: in the demo's temporary "
        "directory); the header prints the kubectl command that watches the target",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="after the curve (or --duration) keep the sandbox and the service running until "
        "Ctrl-C: change the target with kubectl (kubectl edit st web) and watch the next "
        "decisions",
    )
    parser.set_defaults(func=cmd_demo)


MAX_DURATION = 7 * 24 * 3600.0  # demo time; the curve itself is 12 minutes


def parse_demo_duration(text: str) -> float:
    """Demo seconds of ``--duration``: a Prometheus duration (``5m``) or seconds (``900``), at most a week."""
    from autoscaler.values.durations import MAX_DURATION_TEXT, DurationError, parse_duration_text

    shown = f"{text[:20]!r}…" if len(text) > MAX_DURATION_TEXT else repr(text)
    try:
        seconds = parse_duration_text(text, plain_seconds=True)
    except DurationError:  # too long to be meant
        seconds = None
    if seconds is None:
        raise ValueError(f"--duration: {shown} is not a duration (5m, 90s, or seconds)")
    if not 0 < seconds <= MAX_DURATION:  # also false for NaN
        raise ValueError(f"--duration must be more than 0 and at most {MAX_DURATION / 86400:g} days")
    return seconds


def cmd_demo(args: argparse.Namespace) -> int:
    if not sandbox_installed():
        return fail("demo", SANDBOX_MISSING, EXIT_FAILED)
    if missing := missing_emulator_packages():  # an install to fix, as a bad flag is: argparse's exit code
        return fail("demo", emulator_missing(missing), EXIT_INVALID)
    # Imported here, before the event loop starts: importing the service and the emulator takes a
    # good half second, which would otherwise stall the loop.
    from autoscaler_sandbox.demo_run import DemoError, DemoOptions
    from autoscaler_sandbox.sources import SourceError, resolve
    from autoscaler_sandbox.timescale import SPEEDS

    if args.speed not in SPEEDS:
        return fail("demo", f"--speed must be one of {', '.join(map(str, SPEEDS))}, not {args.speed}")
    try:
        duration = parse_demo_duration(args.duration) if args.duration else None
        source = resolve(args.prometheus)
    except (ValueError, SourceError) as exc:
        return fail("demo", str(exc))
    options = DemoOptions(
        speed=args.speed,
        duration=duration,
        quiet=args.quiet,
        prometheus=source,
        kubeconfig=args.kubeconfig,
        keep_running=args.keep_running,
    )
    import asyncio  # loaded when the demo runs, not for `autoscaler --help`

    with contextlib.ExitStack() as files:
        try:
            log = files.enter_context(open(args.log, "a", encoding="utf-8")) if args.log else None
        except OSError as exc:
            return fail("demo", f"--log: {exc}")
        try:
            summary = asyncio.run(_interruptible(options, log))
        except DemoError as exc:
            return fail("demo", str(exc), EXIT_FAILED)
        except KeyboardInterrupt:  # a second Ctrl-C: asyncio.run has cancelled and awaited everything
            return fail("demo", "aborted", EXIT_INTERRUPTED)
    return EXIT_INTERRUPTED if summary.interrupted else EXIT_OK


async def _interruptible(options: DemoOptions, log: TextIO | None) -> Summary:
    """Ctrl-C (or SIGTERM) ends the demo early, with its summary; a second Ctrl-C aborts."""
    import asyncio

    from autoscaler_sandbox.demo_run import run_demo

    loop = asyncio.get_running_loop()
    interrupt = asyncio.Event()

    def stop(signum: int) -> None:
        interrupt.set()
        loop.remove_signal_handler(signum)  # the next one gets Python's default: KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop, signum)
    return await run_demo(options, sys.stdout, interrupt=interrupt, log=log)
