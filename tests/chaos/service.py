"""The real ``autoscaler run`` binary under test, as an operator would see it.

Each :class:`ServiceProcess` is one process with its own settings file, its own TCP relay to the API
emulator (so the chaos test can cut, freeze or slow one instance's connections, and tell which instance
sent which write), optionally a skewed wall clock (libfaketime: ``FAKETIME`` shifts CLOCK_REALTIME only;
the monotonic clock stays true, as on a machine whose NTP is off), and signals (SIGSTOP, SIGCONT,
SIGKILL, SIGTERM). What the test reads is what a user reads: the JSON log, ``/readyz``, ``/metrics``.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from autoscaler_sandbox.freeze import freeze, thaw
from tests.chaos.relay import TcpRelay

ROOT = Path(__file__).resolve().parents[2]


def libfaketime() -> str | None:
    """The multi-threaded libfaketime (Debian's ``faketime`` package), or None."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1")) + sorted(
        glob.glob("/usr/lib/faketime/libfaketimeMT.so.1")
    )
    return found[0] if found else None


class ServiceProcess:
    def __init__(self, workdir: Path, name: str, settings: dict[str, Any], relay: TcpRelay) -> None:
        self.name = name
        self.relay = relay
        self.workdir = workdir
        self.config = workdir / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump(settings))
        self.log = workdir / f"{name}.log"
        self.clock_file = workdir / f"{name}.faketime"
        self.process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None

    # -- life -----------------------------------------------------------------------------------------

    def start(self, *, clock_offset: float | None = None) -> ServiceProcess:
        """Start the process; with ``clock_offset`` its wall clock runs that many seconds ahead (+) or
        behind (−), and :meth:`set_clock_offset` can move it while it runs."""
        env = {**os.environ, "PYTHONPATH": str(ROOT), "POD_NAME": self.name}
        if clock_offset is not None:
            library = libfaketime()
            assert library is not None, "libfaketime is not installed (Debian package 'faketime')"
            self.set_clock_offset(clock_offset)
            env.update(
                {
                    "LD_PRELOAD": library,
                    "FAKETIME_TIMESTAMP_FILE": str(self.clock_file),
                    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                    "FAKETIME_NO_CACHE": "1",
                }
            )
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autoscaler", "run", "--config", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=ROOT,
            )
        self._port = None
        return self

    def set_clock_offset(self, seconds: float) -> None:
        """The process's wall clock becomes real time + ``seconds`` (read by libfaketime on each call)."""
        self.clock_file.write_text(f"{seconds:+.3f}\n")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def pause(self) -> None:
        freeze(self.pid)

    def resume(self) -> None:
        thaw(self.pid)

    def kill(self) -> None:
        if self.alive():
            assert self.process is not None
            self.resume()
            self.process.kill()
            self.process.wait()

    def terminate(self, timeout: float = 10.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.resume()
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                return self.process.wait()
        return self.process.returncode

    # -- what a user sees -------------------------------------------------------------------------------

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for raw in self.log.read_text(errors="replace").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                out.append(line)
        return out

    def events(self, name: str, **fields: Any) -> list[dict[str, Any]]:
        """Log lines whose ``event`` is ``name`` and whose fields include ``fields``."""
        return [
            line
            for line in self.lines()
            if line.get("event") == name and all(line.get(k) == v for k, v in fields.items())
        ]

    def tracebacks(self) -> list[str]:
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if "Traceback" in line]

    @property
    def port(self) -> int:
        if self._port is None:
            started = self.events("http.started")
            assert started, f"{self.name} has not started its HTTP server yet"
            self._port = int(started[-1]["port"])
        return self._port

    async def get(self, path: str, seconds: float = 5.0) -> tuple[int, str]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=seconds)) as session,
            session.get(f"http://127.0.0.1:{self.port}{path}") as response,
        ):
            return response.status, await response.text()

    async def ready(self) -> tuple[bool, dict[str, Any]]:
        status, text = await self.get("/readyz")
        try:
            body = json.loads(text)
        except ValueError:
            body = {"text": text}
        return status == 200, body

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        _, text = await self.get("/metrics")
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    async def metric(self, name: str, /, **labels: str) -> float | None:
        wanted = tuple(sorted(labels.items()))
        samples = await self.metrics()
        if labels:
            return samples.get((name, wanted))
        values = [v for (n, _), v in samples.items() if n == name]
        return sum(values) if values else None


async def wait_until(check: Any, seconds: float = 30.0, what: str = "condition", every: float = 0.1) -> float:
    """Poll ``check`` (a function or coroutine function) until true; returns the seconds it took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + seconds
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return loop.time() - started
        if loop.time() >= deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        await asyncio.sleep(every)


def monotonic() -> float:
    return time.monotonic()
