"""The settings fragment ``convert`` writes beside the targets: ``prometheus.backends`` for the service's
settings file, under a comment block that says which triggers read from each backend and which Secret (or
ConfigMap) key every credential file must be mounted from. It holds references only, never a value read
from a Secret."""

from __future__ import annotations

from autoscaler.convert.keda_backends import BackendRegistry
from autoscaler.values.yaml_files import dump_yaml

FILE_NAME = "autoscaler-backends.yaml"


def render_backends(registry: BackendRegistry, mount_dir: str) -> str:
    lines = [
        "# prometheus.backends for the autoscaler's settings, made by `autoscaler convert` from the KEDA triggers'",
        "# serverAddress, namespace, customHeaders, queryParameters, unsafeSsl, timeout and authenticationRef.",
        "# Merge it into the service's settings file (beside prometheus.url, the default backend).",
    ]
    for name, users in sorted(registry.users.items()):
        lines.append(f"#   {name}: read by {', '.join(users)}")
    mounts = registry.mounts(mount_dir)
    if mounts:
        lines += [
            "# Each credential is a file: mount each key at its path in the autoscaler's pod (a pod mounts",
            "# Secrets and ConfigMaps of its own namespace only: copy those of other namespaces there first).",
        ]
        lines += [f"#   {path}  <-  {reference}" for path, reference in mounts]
    return "\n".join(lines) + "\n" + dump_yaml(registry.fragment(mount_dir))


def mount_lines(registry: BackendRegistry, mount_dir: str) -> list[str]:
    """One line per credential file for stderr: where it is read, and what must be mounted there."""
    return [f"mount {reference} at {path}" for path, reference in registry.mounts(mount_dir)]
