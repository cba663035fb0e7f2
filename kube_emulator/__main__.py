"""Run the emulator standalone: ``python -m kube_emulator --port 8001 --seed objects.yaml``.

It prints its URL, optionally writes a kubeconfig (``--kubeconfig``) for other processes, and
serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from kube_emulator.controllers import WorkloadController
from kube_emulator.kubelet import PodLifecycle
from kube_emulator.server import Controller, KubeEmulator


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m kube_emulator", description="A Kubernetes API emulator on loopback."
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, a free port)")
    parser.add_argument(
        "--seed",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="YAML/JSON objects to load at start (CRDs first); may be repeated",
    )
    parser.add_argument("--kubeconfig", type=Path, help="write a kubeconfig pointing at the emulator here")
    parser.add_argument("--token", help="require this bearer token (written into the kubeconfig)")
    parser.add_argument(
        "--controllers",
        action="store_true",
        help="run the workload controller (pods and status for Deployments/StatefulSets/ReplicaSets)",
    )
    parser.add_argument("--pod-start-delay", type=float, default=1.0, help="seconds from pod creation to Running")
    parser.add_argument("--pod-ready-delay", type=float, default=2.0, help="seconds from Running to Ready")
    parser.add_argument("--watch-history", type=int, default=1000, help="change events kept per resource")
    parser.add_argument(
        "--versions-per-object", type=int, default=20, help="object versions kept for history (memory bound)"
    )
    parser.add_argument("--bookmark-interval", type=float, default=60.0, help="seconds between watch bookmarks")
    return parser.parse_args(argv)


async def serve(arguments: argparse.Namespace) -> None:
    controllers: list[Controller] = []
    if arguments.controllers:
        lifecycle = PodLifecycle(start_delay=arguments.pod_start_delay, ready_delay=arguments.pod_ready_delay)
        controllers.append(WorkloadController(lifecycle))
    emulator = KubeEmulator(
        host=arguments.host,
        port=arguments.port,
        controllers=controllers,
        watch_history=arguments.watch_history,
        versions_per_object=arguments.versions_per_object,
        bookmark_interval=arguments.bookmark_interval,
        token=arguments.token,
    )
    for path in arguments.seed:
        emulator.load_yaml(path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    async with emulator:
        if arguments.kubeconfig is not None:
            emulator.write_kubeconfig(arguments.kubeconfig)
        print(f"Kubernetes API emulator listening on {emulator.url}", flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    asyncio.run(serve(parse_arguments(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
