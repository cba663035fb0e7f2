"""``autoscaler run`` and ``autoscaler explain`` on the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autoscaler.core.fields import SpecError

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


def cmd_run(args: argparse.Namespace) -> int:
    from autoscaler.kube.client import ConnectionSettingsError
    from autoscaler.service.app import run_blocking
    from autoscaler.service.settings import load_service_settings
    from autoscaler.service.targets import load_targets_file

    config = args.config or (str(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else None)
    try:
        settings = load_service_settings(config, flags=flag_overrides(args))
    except SpecError as exc:
        _print_errors(config or "settings", exc)
        return EXIT_INVALID
    try:
        static = load_targets_file(settings.targets_file) if settings.targets_file else None
    except SpecError as exc:  # the targets file's problems, not the settings'
        _print_errors(f"--targets {settings.targets_file}", exc)
        return EXIT_INVALID
    try:
        run_blocking(settings, static_targets=static)
    except ConnectionSettingsError as exc:
        print(f"autoscaler run: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        pass
    return 0


def _print_errors(source: str, error: SpecError) -> None:
    print(f"{source}: invalid ({len(error.errors)} problem{'s' if len(error.errors) != 1 else ''}):",
          file=sys.stderr)
    for item in error.errors:
        print(f"  {item}", file=sys.stderr)


def cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.target.rpartition("/")
    namespace = namespace or args.namespace or "default"
    try:
        status = asyncio.run(_fetch_status(args, namespace, name))
    except LookupError as exc:
        print(f"autoscaler explain: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(status, indent=2))
    else:
        print(explain_status(namespace, name, status))
    return 0


async def _fetch_status(args: argparse.Namespace, namespace: str, name: str) -> Mapping[str, Any]:
    if args.url:
        import aiohttp

        url = f"{args.url.rstrip('/')}/api/targets/{namespace}/{name}"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            try:
                async with session.get(url) as response:
                    if response.status == 404:
                        raise LookupError(f"the service at {args.url} has no target {namespace}/{name}")
                    body = await response.json()
            except aiohttp.ClientError as exc:
                raise LookupError(f"cannot reach {args.url}: {exc}") from exc
        return dict(body.get("status") or {})
    from autoscaler.kube.api import KubeApi, KubeError
    from autoscaler.kube.client import ConnectionSettingsError, make_api_client
    from autoscaler.service.targets import TARGETS

    try:
        api_client = await make_api_client(args.kubeconfig, args.context)
    except ConnectionSettingsError as exc:
        raise LookupError(str(exc)) from exc
    async with api_client:
        try:
            obj = await KubeApi(api_client).get(TARGETS.item(namespace, name))
        except KubeError as exc:
            raise LookupError(f"ScalingTarget {namespace}/{name}: {exc.message or exc}") from exc
    return dict(obj.get("status") or {})


def explain_status(namespace: str, name: str, status: Mapping[str, Any]) -> str:
    """The last decision of a target, in words, from its status."""
    lines = [f"ScalingTarget {namespace}/{name}"]
    decision = status.get("lastDecision") or {}
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
        lines.extend(f"  {line}" for line in decision.get("explanation") or [])
    hvpa = status.get("hvpa")
    if isinstance(hvpa, Mapping) and hvpa.get("explanation"):
        lines.append("")
        lines.extend(f"  {line}" for line in hvpa["explanation"])
    conditions = status.get("conditions") or []
    if conditions:
        lines.append("")
        lines.append("  Conditions:")
        for c in conditions:
            lines.append(f"    {c.get('type')}={c.get('status')} ({c.get('reason')}): {c.get('message')}")
    if status.get("dryRun"):
        lines.append("")
        lines.append("  (dry run: the service decides but does not write to the workload)")
    return "\n".join(lines)
