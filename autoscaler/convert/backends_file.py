"""The settings fragment ``convert`` writes beside the targets: ``prometheus.backends`` for the service's
settings file, under a comment block that says which triggers read from each backend and which Secret (or
ConfigMap) key every credential file must be mounted from. It holds references only, never a value read
from a Secret."""

from __future__ import annotations

from autoscaler.convert.keda_backends import BackendRegistry
from autoscaler.values.yaml_files import dump_yaml

FILE_NAME = "autoscaler-backends.yaml"


def render_backends(registry: BackendRegistry, mount_dir: str, secret_refs: bool = False) -> str:
    lines = [
        "# prometheus.backends for the autoscaler's settings, made by `autoscaler convert` from the KEDA triggers'",
        "# serverAddress, namespace, customHeaders, queryParameters, unsafeSsl, timeout and authenticationRef.",
        "# Merge it into the service's settings file (beside prometheus.url, the default backend).",
    ]
    for name, users in sorted(registry.users.items()):
        lines.append(f"#   {name}: read by {', '.join(users)}")
    reads = registry.secret_reads(secret_refs)
    if reads:
        lines += [
            "# The service reads these Secret keys through the API: grant it get on each Secret (a Role in the",
            "# Secret's namespace bound to its ServiceAccount; docs/prometheus.md shows one).",
        ]
        lines += [f"#   {reference}" for reference in reads]
    mounts = registry.mounts(mount_dir, secret_refs)
    if mounts:
        lines += [
            "# Each credential is a file: mount each key at its path in the autoscaler's pod (a pod mounts",
            "# Secrets and ConfigMaps of its own namespace only: copy those of other namespaces there first).",
        ]
        lines += [f"#   {path}  <-  {reference}" for path, reference in mounts]
    return "\n".join(lines) + "\n" + dump_yaml(registry.fragment(mount_dir, secret_refs))


def credential_lines(registry: BackendRegistry, mount_dir: str, secret_refs: bool = False) -> list[str]:
    """One line per credential for stderr: what the service must be allowed to read, or have mounted where."""
    lines = [
        f"grant the service get on {reference} (read through the API)"
        for reference in registry.secret_reads(secret_refs)
    ]
    lines += [f"mount {reference} at {path}" for path, reference in registry.mounts(mount_dir, secret_refs)]
    return lines
