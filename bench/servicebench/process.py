"""The service under test as its own process (``python -m autoscaler run --config …``), pinned to its CPUs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from autoscaler.prometheus.settings import DEFAULT_TIMEOUT_SECONDS
from autoscaler.values.timestamps import parse_rfc3339
from servicebench.procfs import free_port

ROOT = Path(__file__).resolve().parents[2]
# The environment the image runs the service with (Dockerfile's ENV; tests/test_dockerfile.py checks they agree).
IMAGE_ENV = {"MALLOC_ARENA_MAX": "2"}


class ServiceProcess:
    def __init__(
        self,
        workdir: Path,
        name: str,
        settings: dict[str, Any],
        *,
        profile: bool = False,
        launcher: str | None = None,
        cpus: set[int] | None = None,
    ) -> None:
        self.cpus = cpus  # the CPUs the service may run on (None: any)
        self.launcher = launcher
        self.name = name
        self.port = int(settings["http"]["port"])
        # The service's Prometheus deadline, as its configuration gives it (--set included).
        self.query_deadline = float(settings["prometheus"].get("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS))
        self.config = workdir / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump(settings))
        self.log = workdir / f"{name}.log"
        self.profile = workdir / f"{name}.prof" if profile else None
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.exit_seconds: float | None = None  # SIGTERM → the process gone (see stop)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServiceProcess:
        env = {**os.environ, **IMAGE_ENV, "PYTHONPATH": str(ROOT), "POD_NAME": self.name}
        command = [sys.executable]
        if self.profile is not None:
            command += ["-m", "cProfile", "-o", str(self.profile)]
        command += [self.launcher] if self.launcher else ["-m", "autoscaler"]
        command += ["run", "--config", str(self.config)]
        with open(self.log, "ab") as log:
            self.started = time.monotonic()
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=ROOT,
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if (cpus := self.cpus) else None,
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (a graceful shutdown), SIGKILL if it takes too long."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            sent = time.monotonic()
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
                self.exit_seconds = time.monotonic() - sent
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def lease_figures(self) -> dict[str, int]:
        """From the service's log: Leases lost (stepped down for any reason but shutdown), failed renewals,
        renewals that started late (``leader.renew_late``)."""
        lines = list(self.log_lines())
        return {
            "losses": sum(1 for x in lines if x.get("event") == "leader.stopped" and x.get("reason") != "shutdown"),
            "renew_failures": sum(1 for x in lines if x.get("event") == "leader.renew_failed"),
            "renew_late_warnings": sum(1 for x in lines if x.get("event") == "leader.renew_late"),
        }

    def shutdown_seconds(self) -> float | None:
        """From the service's log: its graceful shutdown, "shutting down" to "stopped" (None: not logged)."""
        times = {
            line.get("event"): parse_rfc3339(line.get("timestamp"))
            for line in self.log_lines()
            if line.get("logger") == "autoscaler.service" and line.get("event") in ("shutting down", "stopped")
        }
        begun, ended = times.get("shutting down"), times.get("stopped")
        return ended - begun if begun is not None and ended is not None else None

    def shutdown_figure(self) -> tuple[float | None, str]:
        """The graceful shutdown's seconds and where they come from: the service's log, or below logging
        level info (no such lines) the harness's SIGTERM → exit (the drain, then the last lines flushed)."""
        logged = self.shutdown_seconds()
        return (logged, "log") if logged is not None else (self.exit_seconds, "SIGTERM → exit")

    def log_lines(self) -> Iterator[dict[str, Any]]:
        for raw in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                if isinstance(line, dict):
                    yield line


def service_settings(args: argparse.Namespace, prometheus_url: str, kubeconfig: Path) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "prometheus": {"url": prometheus_url},
        "kubernetes": {"kubeconfig": str(kubeconfig)},
        "sync": {"periodSeconds": args.period},
        "http": {"address": "127.0.0.1", "port": free_port()},
        "leaderElection": {"enabled": not args.no_leader_election, "leaseNamespace": "default"},
        "logging": {"format": "json", "level": args.log_level},
    }
    for assignment in args.set:
        path, _, text = assignment.partition("=")
        node = settings
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = yaml.safe_load(text)
    return settings


async def stop_all(services: Sequence[ServiceProcess]) -> list[int | None]:
    """SIGTERM every service and wait for them together, off the caller's loop: the emulator answers on
    that loop, and a graceful shutdown needs it (the Lease released, the watches closed). Waiting on the
    loop left each service's last requests unanswered until it gave up, after its 5 s budget."""
    return list(await asyncio.gather(*(asyncio.to_thread(s.stop) for s in services)))
