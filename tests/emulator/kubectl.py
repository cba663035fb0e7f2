"""Running the real ``kubectl`` against an emulator of the test's event loop (as a subprocess, so the
emulator keeps serving while kubectl waits for it)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from autoscaler_sandbox import find_binary
from kube_emulator import KubeEmulator

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Completed:
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"


class Kubectl:
    """``await kubectl("get", "st")``: one kubectl run with its own kubeconfig and HOME.

    Each run discovers the API afresh (its own cache directory), as a first run does: kubectl's disk cache
    would otherwise hide a CRD created by the previous run for hours, whatever server it talks to.
    """

    def __init__(self, emulator: KubeEmulator, workdir: Path) -> None:
        binary = find_binary("kubectl")
        assert binary is not None
        self.binary = binary
        self.kubeconfig = emulator.write_kubeconfig(workdir / "kubeconfig")
        self.workdir = workdir
        self.runs = 0
        self.environment = {
            **{key: value for key, value in os.environ.items() if not key.startswith("KUBE")},
            "HOME": str(workdir),
        }

    def command(self, *args: str) -> list[str]:
        self.runs += 1
        cache = self.workdir / f"kube-cache-{self.runs}"
        return [self.binary, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(cache), *args]

    async def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> Completed:
        process = await asyncio.create_subprocess_exec(
            *self.command(*args),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env=self.environment,
        )
        out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), 120)
        assert process.returncode is not None
        result = Completed(process.returncode, out.decode(), err.decode())
        if check:
            assert result.code == 0, f"kubectl {' '.join(args)} failed: {result}"
        return result

    async def start(self, *args: str) -> asyncio.subprocess.Process:
        """A long-running kubectl (``get -w``); the caller reads its stdout and terminates it."""
        return await asyncio.create_subprocess_exec(
            *self.command(*args),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env=self.environment,
        )


def table(text: str) -> list[list[str]]:
    """kubectl's table output split into cells (columns are separated by at least two spaces or a tab)."""
    import re

    return [re.split(r"\s{2,}|\t", line.strip()) for line in text.splitlines() if line.strip()]
