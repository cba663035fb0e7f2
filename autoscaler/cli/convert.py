"""``autoscaler convert``: read, convert, write, and with ``--compare`` backtest beside the old autoscaler
(docs/migrating.md).

Exit codes (docs/migrating.md), the first that applies: 2 for invalid input — an unreadable file, an object
or adapter configuration that does not convert, and with ``--strict`` anything not converted; 1 when
``--compare`` flags a target or cannot read the history; 3 when, without ``--strict``, something was not
converted (the targets are written without it, each loss named on stderr); 0 when everything converted (and,
with ``--compare``, agreed). An object that fails never stops the others: every convertible one is still written,
and with ``--compare`` a target that cannot be compared is reported by name while the others still compare
(:mod:`autoscaler.cli.convert_compare`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from autoscaler.cli.backtest import read_settings  # --compare is a backtest, with its settings
from autoscaler.cli.errors import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INVALID, EXIT_OK, fail, say
from autoscaler.values.fields import SpecError

if TYPE_CHECKING:  # the conversions, and the Prometheus client, load only when the command runs
    from autoscaler.cli.parser import Subcommands
    from autoscaler.convert.adapter_config import AdapterConfig
    from autoscaler.convert.documents import Inputs
    from autoscaler.convert.model import Conversion

DEFAULT_AGREEMENT = 90.0
# The KEDA options' defaults, written out so that building the parser loads no conversion code (the convert
# modules' own DEFAULT_MOUNT_DIR and DEFAULT_KEDA_NAMESPACE; tests/convert/test_cli.py checks they agree).
DEFAULT_SECRETS_DIR = "/etc/autoscaler/keda"
DEFAULT_KEDA_NAMESPACE = "keda"


def add_parser(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "convert",
        dash_values=("--from", "--to", "--step"),  # --from -7d
        help="convert HPAs (+ prometheus-adapter config) and KEDA ScaledObjects to ScalingTargets",
        description="Convert HorizontalPodAutoscalers, with prometheus-adapter's configuration, and KEDA "
        "ScaledObjects into ScalingTargets; with --compare, backtest each over Prometheus history "
        "beside what the old autoscaler did (docs/migrating.md).",
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE.yaml",
        help="HPAs, ScaledObjects, prometheus-adapter's config file or ConfigMap (any mix, any number of documents)",
    )
    source = parser.add_argument_group("reading from a cluster")
    source.add_argument(
        "--from-cluster",
        action="store_true",
        help="read HPAs, ScaledObjects and the adapter's ConfigMap through the kubeconfig",
    )
    source.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="with --from-cluster: the kubeconfig (default: $KUBECONFIG, ~/.kube/config)",
    )
    source.add_argument("--context", help="with --from-cluster: the kubeconfig's context (default: its current one)")
    source.add_argument("-n", "--namespace", help="only this namespace (default: all)")
    source.add_argument("-l", "--selector", help="only HPAs and ScaledObjects with these labels (app=web,tier!=db)")
    source.add_argument(
        "--adapter-configmap",
        metavar="NAMESPACE/NAME",
        help="the adapter's ConfigMap (default: the one labelled app.kubernetes.io/name=prometheus-adapter)",
    )
    parser.add_argument(
        "--adapter-config", metavar="FILE", help="prometheus-adapter's configuration: its config file, or its ConfigMap"
    )
    parser.add_argument("--output-dir", metavar="DIR", help="write one file per target here instead of stdout")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="anything that does not convert is an error: that object is not written (exit 2; without it, exit 3)",
    )
    keda = parser.add_argument_group("KEDA's prometheus triggers (their backends and credentials)")
    keda.add_argument(
        "--backends-file",
        metavar="FILE",
        help="write the prometheus.backends settings fragment here (default with --output-dir: "
        "DIR/autoscaler-backends.yaml; else a comment block on stdout)",
    )
    keda.add_argument(
        "--secrets-dir",
        default=DEFAULT_SECRETS_DIR,
        metavar="DIR",
        help=f"where the service's pod mounts the Secret keys the backends read (default {DEFAULT_SECRETS_DIR})",
    )
    keda.add_argument(
        "--credentials",
        choices=("secret", "file"),
        default="secret",
        help="a bearer token and a basic auth password as Secret references the service reads through the API "
        "(secret, the default), or as files under --secrets-dir; TLS keys and ConfigMap values are files either way",
    )
    keda.add_argument(
        "--keda-namespace",
        default=DEFAULT_KEDA_NAMESPACE,
        metavar="NAMESPACE",
        help="KEDA's own namespace, where a ClusterTriggerAuthentication's Secrets are "
        f"(KEDA_CLUSTER_OBJECT_NAMESPACE; default {DEFAULT_KEDA_NAMESPACE})",
    )
    compare = parser.add_argument_group("proof before cut-over (--compare)")
    compare.add_argument(
        "--compare",
        action="store_true",
        help="backtest each converted target beside the old autoscaler's recorded decisions",
    )
    compare.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus: which series exist (the adapter's rules are checked against it), and with "
        "--compare the history",
    )
    compare.add_argument("--from", dest="start", metavar="T1", help="start: -7d, RFC 3339, a date, Unix seconds")
    compare.add_argument("--to", dest="end", default="now", metavar="T2", help="end (default now)")
    compare.add_argument(
        "--step",
        metavar="DURATION",
        help="the sync period replayed (default: the target's syncPeriodSeconds, else the HPA's 15s)",
    )
    compare.add_argument(
        "--config",
        metavar="SETTINGS.yaml",
        help="the service's settings (prometheus auth, TLS, labels; controller settings)",
    )
    compare.add_argument(
        "--agreement",
        type=float,
        default=DEFAULT_AGREEMENT,
        metavar="PERCENT",
        help=f"flag a target whose replicas equal the old autoscaler's less than this share of "
        f"the time (default {DEFAULT_AGREEMENT:g})",
    )
    compare.add_argument("--plot-dir", metavar="DIR", help="write each target's backtest plot here (PNG)")
    compare.add_argument("--output", "-o", choices=("text", "json"), default="text", help="the comparison's form")
    parser.set_defaults(func=cmd_convert)


def _fail(message: str) -> int:
    return fail("convert", message)


def _usage_problem(args: argparse.Namespace) -> str | None:
    if not args.files and not args.from_cluster:
        return "nothing to convert: give FILE.yaml arguments, or --from-cluster"
    if args.compare:
        if not args.start:
            return "--compare needs --from (e.g. --from -7d)"
        if not (args.prometheus or args.config or os.environ.get("AUTOSCALER_PROMETHEUS_URL")):
            return "--compare needs --prometheus URL (or --config with prometheus.url)"
    elif args.start or args.plot_dir:
        return "--from and --plot-dir belong to --compare"
    if args.adapter_configmap and "/" not in args.adapter_configmap:
        return f"--adapter-configmap {args.adapter_configmap!r}: write it as NAMESPACE/NAME"
    return None


def _read_files(paths: list[str], inputs: Inputs) -> list[str]:
    from autoscaler.convert.documents import sort_documents
    from autoscaler.values.yaml_files import load_yaml_documents

    problems: list[str] = []
    for path in paths:
        try:
            documents = load_yaml_documents(path)
        except SpecError as exc:
            problems.extend(str(e) for e in exc.errors)
            continue
        sort_documents(((doc, path) for doc in documents), inputs)
    return problems


def _read_cluster(args: argparse.Namespace, inputs: Inputs) -> str | None:
    from autoscaler.convert.cluster import ClusterQuery, read_cluster
    from autoscaler.convert.documents import sort_documents
    from autoscaler.kube.api import KubeError
    from autoscaler.kube.client import ConnectionSettingsError

    query = ClusterQuery(
        args.kubeconfig,
        args.context,
        args.namespace,
        args.selector,
        args.adapter_configmap,
        find_adapter=not args.adapter_config,
        keda_namespace=args.keda_namespace,
    )
    import asyncio  # loaded when the command runs, not for `autoscaler --help`

    try:
        found = asyncio.run(read_cluster(query))
    except (KubeError, ConnectionSettingsError) as exc:
        return f"--from-cluster: {exc}"
    for note in found.notes:
        say("convert", note)
    sort_documents(found.documents, inputs)
    return None


def _adapter(inputs: Inputs) -> tuple[AdapterConfig | None, list[str]]:
    problems = [f"{source}: {error}" for _, source, errors in inputs.adapters for error in errors]
    configs = [(config, source) for config, source, _ in inputs.adapters if config is not None]
    if len(configs) > 1:
        problems.append(
            "several prometheus-adapter configurations (" + ", ".join(s for _, s in configs) + "): "
            "give the one the adapter runs with, alone"
        )
        return None, problems
    return (configs[0][0] if configs else None), problems


def cmd_convert(args: argparse.Namespace) -> int:
    from autoscaler.convert.documents import Inputs, convert_all
    from autoscaler.convert.output import stderr_lines
    from autoscaler.prometheus.errors import PrometheusError

    problem = _usage_problem(args)
    if problem:
        return _fail(problem)
    if args.plot_dir:
        from autoscaler.plot.output import PlotError, check_outputs

        try:
            check_outputs(["plot.png"])
        except PlotError as exc:
            return _fail(str(exc))
    inputs = Inputs()
    inputs.auths.keda_namespace = args.keda_namespace
    inputs.auths.searched = "the input files" + (" or the cluster" if args.from_cluster else "")
    problems = _read_files([*args.files, *([args.adapter_config] if args.adapter_config else [])], inputs)
    if args.from_cluster:
        cluster_problem = _read_cluster(args, inputs)
        if cluster_problem:
            return _fail(cluster_problem)
    adapter, adapter_problems = _adapter(inputs)
    problems.extend(adapter_problems)
    for line in [*problems, *inputs.ignored]:
        say("convert", line)
    if adapter_problems:  # every HPA would be converted without its queries: stop here
        return EXIT_INVALID
    known: frozenset[str] | None = None
    if adapter is not None and (args.prometheus or args.compare):
        try:
            known = _known_series(args, inputs, adapter)
        except SpecError as exc:
            return _fail("settings: " + "; ".join(str(e) for e in exc.errors))
        except PrometheusError as exc:  # convert nothing on a guess
            return fail("convert", f"asking Prometheus which series exist failed: {exc}", EXIT_FAILED)
    conversions = convert_all(inputs, adapter, known)
    failed = False
    for conversion in conversions:
        for line in stderr_lines(conversion, strict=args.strict):
            print(line, file=sys.stderr)
        failed = failed or conversion.target is None or (args.strict and bool(conversion.losses))
    written = [c for c in conversions if c.target is not None and not (args.strict and c.losses)]
    lost = [c for c in written if c.losses]
    if not conversions and not problems:
        say("convert", "no HPA or ScaledObject found")
    adapter_source = adapter.source if adapter is not None else None
    backends = _backends_text(args, inputs, written)
    _write(written, adapter_source, args.output_dir, to_stdout=not args.compare, backends=backends)
    code = EXIT_INVALID if failed or problems else EXIT_OK
    if args.compare and written:
        from autoscaler.cli.convert_compare import run_compare

        compared = run_compare(args, written)
        code = code or compared
    if lost and not code:
        say("convert", f"{len(lost)} target(s) written without what did not convert (see the warnings): exit code 3")
        code = EXIT_INCOMPLETE
    return code


def _backends_text(args: argparse.Namespace, inputs: Inputs, written: list[Conversion]) -> str | None:
    """The backends fragment, written to its file (None then), or returned for stdout; what to mount is said
    on stderr either way."""
    from autoscaler.convert.backends_file import FILE_NAME, credential_lines, render_backends

    inputs.backends.keep(
        {
            str(metric["external"]["backend"])
            for conversion in written
            for metric in (conversion.target or {}).get("spec", {}).get("metrics", [])
            if "backend" in metric.get("external", {})
        }
    )
    if not inputs.backends.backends:
        return None
    secret_refs = args.credentials == "secret"
    text = render_backends(inputs.backends, args.secrets_dir, secret_refs)
    for line in credential_lines(inputs.backends, args.secrets_dir, secret_refs):
        say("convert", line)
    path = args.backends_file or (str(Path(args.output_dir) / FILE_NAME) if args.output_dir else None)
    if path is None:
        say("convert", "the targets read from prometheus.backends: the fragment is on stdout, in a comment block")
        return text
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
    say("convert", f"wrote {path}: merge its prometheus.backends into the service's settings")
    return None


def _known_series(args: argparse.Namespace, inputs: Inputs, adapter: AdapterConfig) -> frozenset[str] | None:
    """The candidate series that Prometheus holds (None when no HPA asks for an adapter metric)."""
    from autoscaler.cli.times import TimeError, parse_time
    from autoscaler.convert.discover import LOOKBACK_SECONDS, known_series, metric_names, presence_query
    from autoscaler.prometheus.client import PrometheusClient

    at, lookback = time.time(), LOOKBACK_SECONDS
    if args.compare:  # the series the history holds: anywhere in the range compared
        try:
            start, at = parse_time(args.start, at), parse_time(args.end, at)
            lookback = max(lookback, at - start)
        except TimeError:
            pass  # said when --compare reads the times
    query = presence_query(adapter, metric_names(inputs.objects), lookback)
    if query is None:
        return None
    settings = read_settings(args)

    async def ask() -> frozenset[str]:
        async with PrometheusClient(settings.prometheus) as client:
            return await known_series(client, query, at)

    import asyncio

    return asyncio.run(ask())


def _write(
    conversions: list[Conversion],
    adapter_source: str | None,
    directory: str | None,
    *,
    to_stdout: bool,
    backends: str | None = None,
) -> None:
    from autoscaler.convert.output import comment_block, file_name, render_all, render_target

    if backends and to_stdout:  # a comment, so that stdout stays a stream of objects kubectl applies
        sys.stdout.write(comment_block(backends))

    if directory:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for conversion in conversions:
            path = out / file_name(conversion)
            path.write_text(render_target(conversion, adapter_source), encoding="utf-8")
            print(f"wrote {path}", file=sys.stderr)
    elif to_stdout and conversions:
        sys.stdout.write(render_all(conversions, adapter_source))
