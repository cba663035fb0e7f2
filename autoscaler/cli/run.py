"""``autoscaler run``: the service, in a cluster or against a kubeconfig (docs/configuration.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoscaler.cli.errors import EXIT_INVALID, EXIT_OK, fail, invalid_file
from autoscaler.values.fields import SpecError

if TYPE_CHECKING:  # the service loads only when the command runs
    from autoscaler.cli.parser import Subcommands
    from autoscaler.service.cluster.targets import Target
    from autoscaler.service.settings import ServiceSettings

DEFAULT_CONFIG = Path("config/autoscaler.yaml")


def add_parser(sub: Subcommands) -> None:
    run = sub.add_parser(
        "run",
        help="run the autoscaler service (in a cluster or against a kubeconfig)",
        description="Run the service: watch ScalingTargets (or --targets FILE), read metrics "
        "from Prometheus, scale workloads. Settings: docs/configuration.md.",
    )
    run.add_argument("--config", metavar="FILE", help=f"settings file (default: {DEFAULT_CONFIG} when it exists)")
    run.add_argument("--prometheus-url", metavar="URL", help="the Prometheus to read metrics from (prometheus.url)")
    run.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the cluster to work on, outside one (default: the in-cluster service account, else $KUBECONFIG, "
        "~/.kube/config)",
    )
    run.add_argument("--context", help="the kubeconfig's context (default: its current one)")
    run.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        metavar="NS",
        help="watch targets in this namespace (repeatable; default: all)",
    )
    run.add_argument("--targets", metavar="FILE", help="read ScalingTarget objects from a YAML file (no CRD)")
    run.add_argument(
        "--sync-period", type=float, metavar="SECONDS", help="seconds between syncs of a target (sync.periodSeconds)"
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        default=None,
        help="decide and report, but write nothing to the scaled workloads",
    )
    run.add_argument(
        "--http-address",
        metavar="ADDRESS",
        help="where the HTTP server listens (default 0.0.0.0, every interface; 127.0.0.1: only this pod or machine)",
    )
    run.add_argument(
        "--http-port", type=int, metavar="PORT", help="the HTTP server's port: metrics, health, /api (http.port)"
    )
    run.add_argument(
        "--no-leader-election",
        action="store_true",
        default=None,
        help="act without holding the Lease: for one replica only (leaderElection.enabled: false)",
    )
    run.add_argument(
        "--shard",
        metavar="NAME",
        help="serve only the targets labelled NAME by sharding.labelKey (autoscaler.dev/shard), with a Lease of "
        "this shard's own (default: the targets without that label; docs/sharding.md)",
    )
    run.add_argument(
        "--log-format",
        choices=("auto", "json", "console"),
        help="json lines, or console text (auto: console on a terminal; logging.format)",
    )
    run.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), help="the least level logged (logging.level)"
    )
    run.add_argument(
        "--record",
        metavar="FILE",
        help="append every sync's inputs and decision to FILE as JSON lines, for `autoscaler "
        "simulate` to replay (docs/simulate.md)",
    )
    run.set_defaults(func=cmd_run)


def flag_overrides(args: argparse.Namespace) -> dict[tuple[str, ...], Any]:
    """The settings the flags set, by their path in the settings file (flags win over the file and the
    environment)."""
    table: dict[str, tuple[str, ...]] = {
        "prometheus_url": ("prometheus", "url"),
        "kubeconfig": ("kubernetes", "kubeconfig"),
        "context": ("kubernetes", "context"),
        "namespaces": ("kubernetes", "namespaces"),
        "targets": ("targets",),
        "sync_period": ("sync", "periodSeconds"),
        "dry_run": ("dryRun",),
        "http_address": ("http", "address"),
        "http_port": ("http", "port"),
        "shard": ("sharding", "shard"),
        "log_format": ("logging", "format"),
        "log_level": ("logging", "level"),
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


def read_run_inputs(
    config: str | None, flags: Mapping[tuple[str, ...], Any]
) -> tuple[ServiceSettings, list[Target] | None]:
    """The settings and the targets file (standalone mode) ``autoscaler run`` starts from; SpecError
    lists what is wrong with them (:class:`TargetsFileError` for the targets file)."""
    from autoscaler.service.cluster.targets import load_targets_file
    from autoscaler.service.settings import load_service_settings

    settings = load_service_settings(config, flags=flags)
    if not settings.serving.targets_file:
        return settings, None
    try:
        # A file's targets obey the shard's label selector too: every shard may read the same file.
        return settings, load_targets_file(settings.serving.targets_file, keep=settings.serving.sharding.serves)
    except SpecError as exc:
        raise TargetsFileError(settings.serving.targets_file, exc) from exc


def cmd_run(args: argparse.Namespace) -> int:
    from autoscaler.kube.client import ConnectionSettingsError
    from autoscaler.service.app import run_blocking

    config = args.config or (str(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else None)
    try:
        settings, static = read_run_inputs(config, flag_overrides(args))
    except TargetsFileError as exc:  # the targets file's problems, not the settings'
        return invalid_file(f"--targets {exc.path}", exc)
    except SpecError as exc:
        return invalid_file(config or "settings", exc)
    if args.record:
        try:
            with open(args.record, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            return fail("run", f"--record {args.record}: cannot write it: {exc.strerror or exc}", EXIT_INVALID)
    try:
        run_blocking(settings, static_targets=static, record=args.record)
    except ConnectionSettingsError as exc:
        return fail("run", str(exc), EXIT_INVALID)
    except KeyboardInterrupt:
        pass
    return EXIT_OK
