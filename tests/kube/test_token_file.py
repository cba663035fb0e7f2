"""The bearer token read from a file follows the file (rotation), and a kubeconfig's ``tokenFile`` is found
for the selected context's user."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes_asyncio.client import Configuration

from autoscaler.kube.client import TokenFile, kubeconfig_token_file, make_api_client


def test_the_token_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    hook = TokenFile(path, recheck=0.0)
    configuration = Configuration()
    hook(configuration)
    assert configuration.api_key["BearerToken"] == "Bearer one"
    swap = tmp_path / "token.new"
    swap.write_text("two")
    swap.replace(path)  # how kubelet swaps a projected token in
    hook(configuration)
    assert configuration.api_key["BearerToken"] == "Bearer two"
    path.unlink()
    hook(configuration)  # a missing file keeps the last token
    assert configuration.api_key["BearerToken"] == "Bearer two"


def test_reload_says_whether_the_token_changed(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one")
    hook = TokenFile(path, recheck=3600.0)
    hook(Configuration())
    assert not hook.reload()
    path.write_text("three")
    assert hook.reload() and hook.reloads == 2


def kubeconfig(tmp_path: Path, user: dict[str, str]) -> Path:
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "main",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": user}, {"name": "other", "user": {"tokenFile": "/elsewhere"}}],
                "contexts": [
                    {"name": "main", "context": {"cluster": "c", "user": "u"}},
                    {"name": "second", "context": {"cluster": "c", "user": "other"}},
                ],
            }
        )
    )
    return path


def test_the_token_file_of_the_selected_user(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, {"tokenFile": "token"})
    assert kubeconfig_token_file(yaml.safe_load(path.read_text()), str(path), None) == tmp_path / "token"
    assert kubeconfig_token_file(yaml.safe_load(path.read_text()), str(path), "second") == Path("/elsewhere")
    inline = kubeconfig(tmp_path, {"token": "inline"})
    assert kubeconfig_token_file(yaml.safe_load(inline.read_text()), str(inline), None) is None


async def test_a_client_from_a_kubeconfig_with_a_token_file_rereads_it(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("one")
    async with await make_api_client(str(kubeconfig(tmp_path, {"tokenFile": "token"}))) as client:
        hook = client.configuration.refresh_api_key_hook
        assert isinstance(hook, TokenFile)
        assert await client.configuration.get_api_key_with_prefix("BearerToken") == "Bearer one"
        (tmp_path / "token").write_text("rotated")
        assert hook.reload()
        assert await client.configuration.get_api_key_with_prefix("BearerToken") == "Bearer rotated"
