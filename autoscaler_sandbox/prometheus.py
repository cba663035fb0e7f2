"""Run a private ``prometheus`` binary on a free loopback port, with its own storage and config.

Typical use (tests, benchmarks, the demo)::

    with PrometheusSandbox(scrape_targets=[ScrapeTarget(exporter.address)], scrape_interval=1) as prom:
        prom.wait_for_series('up{job="sandbox"}')
        ... prom.url ...

or, deterministically, with data loaded before start (``promtool tsdb create-blocks-from
openmetrics``) and queried at fixed times::

    prom = PrometheusSandbox()
    prom.backfill(openmetrics_text)   # text ending in "# EOF", explicit timestamps in seconds
    prom.start()

Faults: :meth:`pause`/:meth:`resume` (SIGSTOP/SIGCONT: connections hang, calls time out),
:meth:`stop` (connection refused), :meth:`restart` (same port and storage).

The lifecycle methods block (start waits for ``/-/ready``, typically 0.1-0.3 s); async code
calls :meth:`astart`/:meth:`astop`, which run them in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from autoscaler_sandbox.freeze import freeze, thaw


class SandboxError(RuntimeError):
    """The sandboxed server could not be started or driven; the message has its log tail."""


def find_binary(name: str) -> str | None:
    """The path of ``name`` (``prometheus``, ``promtool``) on PATH or in /usr/bin, or None."""
    found = shutil.which(name)
    if found:
        return found
    candidate = Path("/usr/bin") / name
    return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class ScrapeTarget:
    address: str
    job: str = "sandbox"
    metrics_path: str = "/metrics"
    honor_labels: bool = True


class PrometheusSandbox:
    kind = "prometheus"  # which server this is (tests run some servers' sandboxes in its place)

    def __init__(
        self,
        *,
        scrape_targets: Sequence[ScrapeTarget] = (),
        scrape_interval: float = 1.0,
        work_dir: str | Path | None = None,
        binary: str | None = None,
        promtool: str | None = None,
        retention: str = "100y",
        extra_args: Sequence[str] = (),
        startup_timeout: float = 30.0,
        log_level: str = "warn",
        host: str = "127.0.0.1",
    ) -> None:
        self.binary = binary or find_binary("prometheus")
        self.promtool = promtool or find_binary("promtool")
        self.scrape_targets = list(scrape_targets)
        self.scrape_interval = scrape_interval
        self.retention = retention
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.host = host
        self._owns_dir = work_dir is None
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="autoscaler-prom-"))
        self.data_dir = self.work_dir / "data"
        self.config_file = self.work_dir / "prometheus.yml"
        self.log_file = self.work_dir / "prometheus.log"
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._paused = False
        # Headers for the sandbox's own requests (readiness, query): a server started behind basic auth
        # (a test's ``--web.config.file``) wants them on every endpoint.
        self.request_headers: dict[str, str] = {}

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port is None:
            raise SandboxError("the sandbox has not been started")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> PrometheusSandbox:
        """Start (or restart on the same port) and wait until ``/-/ready`` answers 200."""
        if self.running:
            return self
        if self.binary is None:
            raise SandboxError("the prometheus binary is not installed (Debian package 'prometheus')")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.write_config()
        attempts = 1 if self.port is not None else 3
        for attempt in range(attempts):
            if self.port is None or attempt > 0:
                self.port = free_port(self.host)
            self._spawn()
            try:
                self.wait_ready(self.startup_timeout)
                return self
            except SandboxError:
                self._kill()
                if attempt == attempts - 1 or "address already in use" not in self.log_tail():
                    raise
        return self

    def _spawn(self) -> None:
        assert self.port is not None
        self._launch(
            [
                f"--config.file={self.config_file}",
                f"--storage.tsdb.path={self.data_dir}",
                f"--storage.tsdb.retention.time={self.retention}",
                f"--web.listen-address={self.host}:{self.port}",
                f"--log.level={self.log_level}",
                *self.extra_args,
            ]
        )

    def _launch(self, args: Sequence[str]) -> None:
        """Run the binary with ``args``, its output appended to the log file."""
        assert self.binary is not None
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            self._process = subprocess.Popen(
                [self.binary, *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.work_dir
            )
        finally:
            log.close()
        self._paused = False

    def write_config(self) -> None:
        interval = f"{max(1, round(self.scrape_interval * 1000))}ms"
        config: dict[str, Any] = {
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "scrape_configs": [
                {
                    "job_name": target.job,
                    "honor_labels": target.honor_labels,
                    "metrics_path": target.metrics_path,
                    "static_configs": [{"targets": [target.address]}],
                }
                for target in self.scrape_targets
            ],
        }
        self.config_file.write_text(yaml.safe_dump(config))

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise SandboxError(f"{Path(self.binary or '?').name} exited during start-up:\n{self.log_tail()}")
            try:
                ready = urllib.request.Request(self.url + "/-/ready", headers=self.request_headers)
                with urllib.request.urlopen(ready, timeout=0.5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise SandboxError(f"{Path(self.binary or '?').name} was not ready within {timeout:g}s:\n{self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL); storage and port are kept for :meth:`start`."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            if self._paused:
                thaw(process.pid)
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        self._process = None
        self._paused = False

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None

    def restart(self) -> PrometheusSandbox:
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop and delete the working directory (if the sandbox created it)."""
        self.stop()
        if self._owns_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> PrometheusSandbox:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def astart(self) -> PrometheusSandbox:
        return await asyncio.to_thread(self.start)

    async def astop(self) -> None:
        await asyncio.to_thread(self.stop)

    # -- faults ---------------------------------------------------------------------------------

    def pause(self) -> None:
        """SIGSTOP: the port stays open, nothing answers (calls hang until their timeout)."""
        if not self.running or self._process is None:
            raise SandboxError("cannot pause: prometheus is not running")
        freeze(self._process.pid)
        self._paused = True

    def resume(self) -> None:
        if self._process is not None and self._paused:
            thaw(self._process.pid)
        self._paused = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        self.pause()
        try:
            yield
        finally:
            self.resume()

    # -- data -----------------------------------------------------------------------------------

    def backfill(self, openmetrics: str | Path) -> None:
        """Load OpenMetrics text (or a file) into storage with ``promtool tsdb
        create-blocks-from openmetrics``; a running server is restarted to see the blocks."""
        if self.promtool is None:
            raise SandboxError("promtool is not installed (Debian package 'prometheus')")
        was_running = self.running
        if was_running:
            self.stop()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if isinstance(openmetrics, Path):
            source = openmetrics
        else:
            source = self.work_dir / f"backfill-{time.monotonic_ns()}.om"
            text = openmetrics if openmetrics.rstrip().endswith("# EOF") else openmetrics + "# EOF\n"
            source.write_text(text)
        completed = subprocess.run(
            [self.promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(self.data_dir)],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.work_dir,
        )
        if source.parent == self.work_dir and not isinstance(openmetrics, Path):
            source.unlink(missing_ok=True)
        if completed.returncode != 0:
            raise SandboxError(
                f"promtool backfill failed ({completed.returncode}):\n"
                f"{completed.stdout[-2000:]}{completed.stderr[-2000:]}"
            )
        if was_running:
            self.start()

    def query(self, promql: str, at: float | None = None, timeout: float = 5.0) -> dict[str, Any]:
        """A blocking instant query (for set-up code; the service uses the async client)."""
        form = {"query": promql}
        if at is not None:
            form["time"] = f"{at:.3f}"
        request = urllib.request.Request(
            self.url + "/api/v1/query",
            data=urllib.parse.urlencode(form).encode(),
            method="POST",
            headers=self.request_headers,
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            document: dict[str, Any] = json.loads(response.read())
        return document

    def wait_for(self, promql: str, predicate: Callable[[list[Any]], bool] = bool, timeout: float = 30.0) -> list[Any]:
        """Poll ``promql`` until ``predicate(result)`` holds; return that result."""
        deadline = time.monotonic() + timeout
        result: list[Any] = []
        while time.monotonic() < deadline:
            try:
                result = self.query(promql)["data"]["result"]
                if predicate(result):
                    return result
            except (urllib.error.URLError, OSError, KeyError, ValueError):
                pass
            time.sleep(0.2)
        raise SandboxError(
            f"{promql!r} did not produce the expected result within {timeout:g}s (last: {str(result)[:300]})"
        )

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
