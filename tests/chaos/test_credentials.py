"""Service-account token rotation (F21): the token file is re-read, so a rotated token causes no outage, and
no token ever reaches the log — not in messages, not in exceptions.

The service reads its token from a file (kubeconfig ``tokenFile``, the way a projected service-account
token is mounted); the test rotates it the harshest way: the emulator rejects the old token (401) the
moment the file holds the new one.
"""

from __future__ import annotations

import time
from pathlib import Path

from autoscaler_sandbox import MetricsExporter, PrometheusSandbox
from kube_emulator import KubeEmulator
from tests.chaos.conftest import Chaos
from tests.chaos.service import wait_until
from tests.chaos.world import replicas_of, set_load, status_of, target
from tests.service.cluster import deployment

FIRST, SECOND = "first-token-3f9a1c0d5e", "second-token-b72e44a1c9"
FAST = {"scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 1}]}}


async def test_f21_a_rotated_token_is_read_again_and_never_logged(
    chaos: Chaos, cluster: KubeEmulator, exporter: MetricsExporter, prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    await set_load(exporter, prometheus, 20)
    cluster.create(deployment("web", 2))
    cluster.create(target("web", behavior=FAST))
    cluster.rotate_token(FIRST)
    token = tmp_path / "token"
    token.write_text(FIRST)
    instance = await chaos.service("a", token_file=token)
    await wait_until(lambda: status_of(cluster, "web").get("desiredReplicas") == 2, 30, "a first decision")

    # kubelet writes the new token next to the old and swaps it in; the server stops taking the old one.
    fresh = tmp_path / "token.new"
    fresh.write_text(SECOND)
    fresh.replace(token)
    cluster.rotate_token(SECOND)
    rotated = time.monotonic()
    await set_load(exporter, prometheus, 40)
    await wait_until(lambda: replicas_of(cluster, "web") == 4, 15, "a scale with the new token")
    rejected = [r for r in cluster.requests.find(status=401) if r.started >= rotated]
    assert len(rejected) <= 3, f"{len(rejected)} requests were refused after the rotation"
    assert (await instance.ready())[0]

    # A refused token must not show in the log either: rotate on the server only, for a moment.
    cluster.rotate_token("third-token-not-in-the-file")
    refused = time.monotonic()
    await wait_until(
        lambda: any(r.started >= refused for r in cluster.requests.find(status=401)), 10, "refused requests"
    )
    cluster.rotate_token(SECOND)
    text = instance.log.read_text(errors="replace")
    for secret in (FIRST, SECOND):
        assert secret not in text, "a token reached the log"
    assert instance.alive()
