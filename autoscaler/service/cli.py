"""``autoscaler run`` and ``autoscaler explain`` on the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoscaler.core.fields import SpecError, problem_report

if TYPE_CHECKING:  # the service loads only when a command runs
    from autoscaler.service.settings import ServiceSettings
    from autoscaler.service.targets import Target

DEFAULT_CONFIG = Path("config/autoscaler.yaml")
EXIT_INVALID = 2


def add_parsers(sub: Any) -> None:
    run = sub.add_parser("run", help="run the autoscaler service (in a cluster or against a kubeconfig)",
                         description="Run the service: watch ScalingTargets (or --targets FILE), read metrics "
                                     "from Prometheus, scale workloads. Settings: docs/configuration.md.")
    run.add_argument("--config", metavar="FILE",
                     help=f"settings file (default: {DEFAULT_CONFIG} when it exists)")
    run.add_argument("--prometheus-url", metavar="URL")
    run.add_argument("--kubeconfig", metavar="FILE")
    run.add_argument("--context")
    run.add_argument("--namespace", action="append", dest="namespaces", metavar="NS",
                     help="watch targets in this namespace (repeatable; default: all)")
    run.add_argument("--targets", metavar="FILE", help="read ScalingTarget objects from a YAML file (no CRD)")
    run.add_argument("--sync-period", type=float, metavar="SECONDS")
    run.add_argument("--dry-run", action="store_true", default=None,
                     help="decide and report, but write nothing to the scaled workloads")
    run.add_argument("--http-port", type=int)
    run.add_argument("--no-leader-election", action="store_true", default=None)
    run.add_argument("--log-format", choices=("auto", "json", "console"))
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    run.add_argument("--record", metavar="FILE",
                     help="append every sync's inputs and decision to FILE as JSON lines, for `autoscaler "
                          "simulate` to replay (docs/simulate.md)")
    run.set_defaults(func=cmd_run)

    explain = sub.add_parser("explain", help="print a target's last decision in words",
                             description="Print the last decision of a target from its live status: each "
                                         "metric's value and proposal, the pods set aside, and what limited it.")
    explain.add_argument("target", metavar="TARGET", help="NAME or NAMESPACE/NAME")
    explain.add_argument("-n", "--namespace", default=None)
    explain.add_argument("--kubeconfig", metavar="FILE")
    explain.add_argument("--context")
    explain.add_argument("--url", metavar="URL", help="read from a running service's HTTP endpoint instead "
                                                      "(standalone mode), e.g. http://localhost:8080")
    explain.add_argument("--output", "-o", choices=("text", "json"), default="text")
    explain.set_defaults(func=cmd_explain)


def flag_overrides(args: argparse.Namespace) -> dict[tuple[str, ...], Any]:
    table: dict[str, tuple[str, ...]] = {
        "prometheus_url": ("prometheus", "url"), "kubeconfig": ("kubernetes", "kubeconfig"),
        "context": ("kubernetes", "context"), "namespaces": ("kubernetes", "namespaces"), "targets": ("targets",),
        "sync_period": ("sync", "periodSeconds"), "dry_run": ("dryRun",), "http_port": ("http", "port"),
        "log_format": ("logging", "format"), "log_level": ("logging", "level"),
    }
    overrides = {path: getattr(args, name) for name, path in table.items() if getattr(args, name) is not None}
    if args.no_leader_election:
        overrides[("leaderElection", "enabled")] = False
    return overrides


class TargetsFileError(SpecError):
    """What is wrong with the ``--targets`` file, told apart from the settings' problems."""

    def __init__(self, path: str, error: SpecError) -> None:
        super().__init__(error.errors)
        self.path = path


def read_run_inputs(config: str | None,
                    flags: Mapping[tuple[str, ...], Any]) -> tuple[ServiceSettings, list[Target] | None]:
    """The settings and the targets file (standalone mode) ``autoscaler run`` starts from; SpecError
    lists what is wrong with them (:class:`TargetsFileError` for the targets file)."""
    from autoscaler.service.settings import load_service_settings
    from autoscaler.service.targets import load_targets_file

    settings = load_service_settings(config, flags=flags)
    if not settings.targets_file:
        return settings, None
    try:
        return settings, load_targets_file(settings.targets_file)
    except SpecError as exc:
        raise TargetsFileError(settings.targets_file, exc) from exc


def cmd_run(args: argparse.Namespace) -> int:
    from autoscaler.kube.client import ConnectionSettingsError
    from autoscaler.service.app import run_blocking

    config = args.config or (str(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else None)
    try:
        settings, static = read_run_inputs(config, flag_overrides(args))
    except TargetsFileError as exc:  # the targets file's problems, not the settings'
        _print_errors(f"--targets {exc.path}", exc)
        return EXIT_INVALID
    except SpecError as exc:
        _print_errors(config or "settings", exc)
        return EXIT_INVALID
    if args.record:
        try:
            with open(args.record, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            print(f"autoscaler run: --record {args.record}: cannot write it: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_INVALID
    try:
        run_blocking(settings, static_targets=static, record=args.record)
    except ConnectionSettingsError as exc:
        print(f"autoscaler run: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        pass
    return 0


def _print_errors(source: str, error: SpecError) -> None:
    print(problem_report(source, error), file=sys.stderr)


def cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.target.rpartition("/")
    namespace = namespace or args.namespace or "default"
    if not name or "/" in namespace:
        print(f"autoscaler explain: TARGET must be NAME or NAMESPACE/NAME, not {args.target!r}", file=sys.stderr)
        return EXIT_INVALID
    from autoscaler.kube.client import ConnectionSettingsError

    try:
        status = asyncio.run(_fetch_status(args, namespace, name))
    except ConnectionSettingsError as exc:  # a kubeconfig that cannot be read: bad input, like run's
        print(f"autoscaler explain: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except LookupError as exc:
        print(f"autoscaler explain: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(status, indent=2))
    else:
        print(explain_status(namespace, name, status))
    return 0


async def _fetch_status(args: argparse.Namespace, namespace: str, name: str) -> Mapping[str, Any]:
    from autoscaler.kube.jsondecode import loads

    if args.url:
        import aiohttp

        url = f"{args.url.rstrip('/')}/api/targets/{namespace}/{name}"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            try:
                async with session.get(url) as response:
                    if response.status == 404:
                        raise LookupError(f"the service at {args.url} has no target {namespace}/{name}")
                    text = await response.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise LookupError(f"cannot reach {args.url}: {exc or 'no answer in time'}") from exc
        try:
            body = loads(text)
        except ValueError as exc:
            raise LookupError(f"{url} answered HTTP {response.status} with no JSON: {text[:100]!r}") from exc
        return dict(_mapping(_mapping(body).get("status")))
    from autoscaler.kube.api import KubeApi, KubeError
    from autoscaler.kube.client import make_api_client
    from autoscaler.service.targets import TARGETS

    api_client = await make_api_client(args.kubeconfig, args.context)
    async with api_client:
        try:
            obj = await KubeApi(api_client).get(TARGETS.item(namespace, name))
        except KubeError as exc:
            raise LookupError(f"ScalingTarget {namespace}/{name}: {exc.message or exc}") from exc
    return dict(_mapping(_mapping(obj).get("status")))


def explain_status(namespace: str, name: str, status: Mapping[str, Any]) -> str:
    """The last decision of a target, in words, from its status (read as it comes: anyone may write a
    status, so a part of another shape is left out rather than trusted)."""
    lines = [f"ScalingTarget {namespace}/{name}"]
    decision = _mapping(status.get("lastDecision"))
    if not decision:
        lines.append("  no decision yet")
    else:
        scaled = "scaled" if decision.get("scaled") else "kept"
        proposal = decision.get("proposal")
        proposed = "no metric proposal" if proposal is None else f"metric proposal: {proposal}"
        lines.append(f"  last decision at {decision.get('time')}: {scaled} {decision.get('currentReplicas')} → "
                     f"{decision.get('replicas')} replicas ({proposed})")
        if decision.get("limitedBy"):
            lines.append(f"  limited by: {decision['limitedBy']}")
        if decision.get("error"):
            lines.append(f"  error: {decision['error']}")
        lines.append("")
        lines.extend(f"  {line}" for line in _list(decision.get("explanation")))
    explanation = _list(_mapping(status.get("hvpa")).get("explanation"))
    if explanation:
        lines.append("")
        lines.extend(f"  {line}" for line in explanation)
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, Mapping)]
    if conditions:
        lines.append("")
        lines.append("  Conditions:")
        for c in conditions:
            lines.append(f"    {c.get('type')}={c.get('status')} ({c.get('reason')}): {c.get('message')}")
    if status.get("dryRun"):
        lines.append("")
        lines.append("  (dry run: the service decides but does not write to the workload)")
    return "\n".join(lines)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
