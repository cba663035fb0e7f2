"""``autoscaler run`` reads its kubeconfig before it listens: a bad one is the error a person sees, and
nothing has bound a port or logged ``http.started`` by then (even with the HTTP port taken)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


def test_a_bad_kubeconfig_fails_before_the_http_server_binds(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: oops\n", encoding="utf-8")
    with socket.socket() as taken:  # the port the service is told to use is busy: it must not get that far
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "autoscaler",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--prometheus-url",
                "http://127.0.0.1:9",
                "--http-address",
                "127.0.0.1",
                "--http-port",
                str(port),
                "--no-leader-election",
                "--log-format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,  # no config/autoscaler.yaml here
        )
    assert result.returncode == 2, result.stderr
    assert f"autoscaler run: kubeconfig {kubeconfig}:" in result.stderr
    assert "http.started" not in result.stdout + result.stderr
