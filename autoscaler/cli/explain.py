"""``autoscaler explain``: a target's last decision in words, from its live status."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from autoscaler.cli.errors import EXIT_FAILED, EXIT_INVALID, EXIT_OK, fail
from autoscaler.values.loose_json import as_list, as_mapping, mappings_in

if TYPE_CHECKING:
    from autoscaler.cli.parser import Subcommands


def add_parser(sub: Subcommands) -> None:
    explain = sub.add_parser(
        "explain",
        help="print a target's last decision in words",
        description="Print the last decision of a target from its live status: each "
        "metric's value and proposal, the pods set aside, and what limited it.",
    )
    explain.add_argument("target", metavar="TARGET", help="NAME or NAMESPACE/NAME")
    explain.add_argument(
        "-n", "--namespace", default=None, help="the target's namespace when TARGET is a NAME (default: default)"
    )
    explain.add_argument("--kubeconfig", metavar="FILE", help="the kubeconfig (default: $KUBECONFIG, ~/.kube/config)")
    explain.add_argument("--context", help="the kubeconfig's context (default: its current one)")
    explain.add_argument(
        "--url",
        metavar="URL",
        help="read from a running service's HTTP endpoint instead (standalone mode), e.g. http://localhost:8080",
    )
    explain.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --url: send the token in FILE, for a service whose API asks for one (http.tokenFile)",
    )
    explain.add_argument(
        "--output", "-o", choices=("text", "json"), default="text", help="the explanation's form (default: text)"
    )
    explain.set_defaults(func=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    namespace, _, name = args.target.rpartition("/")
    namespace = namespace or args.namespace or "default"
    if not name or "/" in namespace:
        return fail("explain", f"TARGET must be NAME or NAMESPACE/NAME, not {args.target!r}")
    import asyncio  # loaded when the command runs, not for `autoscaler --help`

    from autoscaler.kube.client import ConnectionSettingsError

    try:
        status = asyncio.run(_fetch_status(args, namespace, name))
    except ConnectionSettingsError as exc:  # a kubeconfig that cannot be read: bad input, like run's
        return fail("explain", str(exc), EXIT_INVALID)
    except LookupError as exc:
        return fail("explain", str(exc), EXIT_FAILED)
    if args.output == "json":
        print(json.dumps(status, indent=2))
    else:
        print(explain_status(namespace, name, status))
    return EXIT_OK


async def _fetch_status(args: argparse.Namespace, namespace: str, name: str) -> Mapping[str, Any]:
    import asyncio

    from autoscaler.kube.jsondecode import loads

    if args.url:
        import aiohttp

        url = f"{args.url.rstrip('/')}/api/targets/{namespace}/{name}"
        token = await asyncio.to_thread(_read_token, args.token_file) if args.token_file else None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
            try:
                async with session.get(url, headers=headers) as response:
                    if response.status == 404:
                        raise LookupError(f"the service at {args.url} has no target {namespace}/{name}")
                    if response.status == 401:
                        raise LookupError(f"the service at {args.url} asks for a token (http.tokenFile): --token-file")
                    text = await response.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise LookupError(f"cannot reach {args.url}: {exc or 'no answer in time'}") from exc
        try:
            body = loads(text)
        except ValueError as exc:
            raise LookupError(f"{url} answered HTTP {response.status} with no JSON: {text[:100]!r}") from exc
        return dict(as_mapping(as_mapping(body).get("status")))
    from autoscaler.kube.api import KubeApi, KubeError
    from autoscaler.kube.client import make_api_client
    from autoscaler.service.cluster.targets import TARGETS

    api_client = await make_api_client(args.kubeconfig, args.context)
    async with api_client:
        try:
            obj = await KubeApi(api_client).get(TARGETS.item(namespace, name))
        except KubeError as exc:
            raise LookupError(f"ScalingTarget {namespace}/{name}: {exc.message or exc}") from exc
    return dict(as_mapping(as_mapping(obj).get("status")))


def _read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as exc:
        raise LookupError(f"--token-file {path}: {exc.strerror or exc}") from None


def explain_status(namespace: str, name: str, status: Mapping[str, Any]) -> str:
    """The last decision of a target, in words, from its status (read as it comes: anyone may write a
    status, so a part of another shape is left out rather than trusted). Upstream's messages, kept exact
    in the status, are shown without their ``(<nil>)``."""
    from autoscaler.core.explain import readable

    lines = [f"ScalingTarget {namespace}/{name}"]
    decision = as_mapping(status.get("lastDecision"))
    if not decision:
        lines.append("  no decision yet")
    else:
        scaled = "scaled" if decision.get("scaled") else "kept"
        proposal = decision.get("proposal")
        proposed = "no metric proposal" if proposal is None else f"metric proposal: {proposal}"
        lines.append(
            f"  last decision at {decision.get('time')}: {scaled} {decision.get('currentReplicas')} → "
            f"{decision.get('replicas')} replicas ({proposed})"
        )
        if decision.get("limitedBy"):
            lines.append(f"  limited by: {readable(str(decision['limitedBy']))}")
        if decision.get("error"):
            lines.append(f"  error: {decision['error']}")
        lines.append("")
        lines.extend(f"  {line}" for line in as_list(decision.get("explanation")))
    explanation = as_list(as_mapping(status.get("hvpa")).get("explanation"))
    if explanation:
        lines.append("")
        lines.extend(f"  {line}" for line in explanation)
    conditions = mappings_in(status.get("conditions"))
    if conditions:
        lines.append("")
        lines.append("  Conditions:")
        for c in conditions:
            lines.append(
                f"    {c.get('type')}={c.get('status')} ({c.get('reason')}): {readable(str(c.get('message')))}"
            )
    if status.get("dryRun"):
        lines.append("")
        lines.append("  (dry run: the service decides but does not write to the workload)")
    return "\n".join(lines)
