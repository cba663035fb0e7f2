"""Connecting to the cluster: in-cluster configuration inside a pod, otherwise a kubeconfig.

Order, as kubectl and client-go do it: an explicit ``--kubeconfig``; else, when running in a pod
(``KUBERNETES_SERVICE_HOST`` set and the service-account token mounted), the in-cluster
configuration (whose token kubernetes-asyncio re-reads as it rotates); else ``$KUBECONFIG``; else
``~/.kube/config``. ``--context`` picks a kubeconfig context.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration

from autoscaler.core.fields import SpecError, type_name
from autoscaler.files import load_yaml_file

SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


class ConnectionSettingsError(Exception):
    """The cluster cannot be reached with the given settings (the message says what to fix)."""


def running_in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and SERVICE_ACCOUNT_TOKEN.exists()


def kubeconfig_path(explicit: str | None) -> str:
    """The kubeconfig to load (start-up only: a stat of one local file)."""
    path = explicit or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    first = path.split(os.pathsep)[0]
    if not Path(first).exists():
        raise ConnectionSettingsError(
            f"no kubeconfig at {first} and not running in a cluster: pass --kubeconfig or set KUBECONFIG")
    return first


async def make_api_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    configuration = Configuration()
    if kubeconfig is None and running_in_cluster():
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return ApiClient(configuration=configuration)
    first = kubeconfig_path(kubeconfig)
    try:
        # Read through the project's loader first: a file that is not UTF-8, not YAML, or nested or
        # sized past the limits gets its line and column (kubernetes-asyncio's loader would raise
        # RecursionError, UnicodeDecodeError or a bare YAML error on it).
        document = load_yaml_file(first)
    except SpecError as exc:
        raise ConnectionSettingsError(f"kubeconfig {first}: {'; '.join(e.message for e in exc.errors)}") from None
    if not isinstance(document, Mapping):
        raise ConnectionSettingsError(f"kubeconfig {first}: must be a YAML mapping (a Config), not "
                                      f"{type_name(document)}")
    try:
        await config.load_kube_config(config_file=first, context=context,
                                      client_configuration=configuration)
    except (config.ConfigException, OSError, ValueError) as exc:
        raise ConnectionSettingsError(f"kubeconfig {first}: {exc}") from exc
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        # kubernetes-asyncio reads the Config's structure as it goes: a section of the wrong shape
        # surfaces as one of these from inside it.
        raise ConnectionSettingsError(f"kubeconfig {first}: not a valid Config (a section has the wrong "
                                      f"shape: {type(exc).__name__}: {exc})") from exc
    return ApiClient(configuration=configuration)
