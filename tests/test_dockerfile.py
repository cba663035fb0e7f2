"""The Dockerfile's essentials, read from the file (there is no Docker engine here): multi-stage on a slim
Python base, a numeric non-root user, ``autoscaler run`` as the command with the settings file it copies,
and only the runtime dependencies installed (the wheel built from the package; no dev extras)."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import setuptools
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DEV_TOOLS = ("pytest", "ruff", "mypy", "hypothesis", "types-")


@dataclass
class Instruction:
    keyword: str
    arguments: str
    flags: dict[str, str] = field(default_factory=dict)

    def exec_form(self) -> list[str]:
        """The JSON (exec) form of ENTRYPOINT/CMD; a shell form is an error (signals would go to a shell)."""
        value = json.loads(self.arguments)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value), self.arguments
        return list(value)


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse(text: str) -> list[Stage]:
    """Instructions grouped by stage: comments and parser directives dropped, continuation lines joined,
    leading ``--flag=value`` options split off."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "a continued instruction never ends"
    stages: list[Stage] = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        rest = rest.strip()
        flags: dict[str, str] = {}
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            flag_name, _, value = flag[2:].partition("=")
            flags[flag_name] = value
            rest = rest.strip()
        instruction = Instruction(keyword.upper(), rest, flags)
        if instruction.keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        else:
            assert stages, f"{keyword} before the first FROM"
            stages[-1].instructions.append(instruction)
    return stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def pip_commands(stage: Stage, verb: str) -> list[list[str]]:
    """Every ``pip <verb> …`` of the stage's RUN instructions, split into words."""
    commands = []
    for run in stage.all("RUN"):
        for part in re.split(r"&&|;|\|\|", run.arguments):
            words = shlex.split(part)
            for start in range(len(words)):
                if words[start : start + 2] == ["pip", verb] or words[start : start + 4] == [
                    "python",
                    "-m",
                    "pip",
                    verb,
                ]:
                    commands.append(words[start + (2 if words[start] == "pip" else 4) :])
    return commands


def test_multi_stage_on_a_slim_python(stages: list[Stage], pyproject: dict[str, Any]) -> None:
    assert len(stages) >= 2
    python = str(pyproject["project"]["requires-python"]).removeprefix(">=")
    for stage in stages:
        assert re.fullmatch(rf"python:{re.escape(python)}(\.\d+)?-slim(-\w+)?", stage.image), stage.image
    assert stages[-1].name is None or stages[-1].name != stages[0].name


def test_runs_as_a_numeric_non_root_user(stages: list[Stage]) -> None:
    final = stages[-1]
    users = final.all("USER")
    assert users, "the runtime stage must set USER"
    uid, _, gid = users[-1].arguments.partition(":")
    assert uid.isdigit() and int(uid) > 0, "numeric (runAsNonRoot can only verify a numeric user)"
    assert gid.isdigit() and int(gid) > 0
    after = final.instructions[final.instructions.index(users[-1]) + 1 :]
    assert not [i for i in after if i.keyword == "RUN"], "nothing runs as root after USER"
    created = " ".join(i.arguments for i in final.all("RUN"))
    assert f"--uid {uid}" in created and f"--gid {gid}" in created, "the user and group exist in the image"


def test_command_is_autoscaler_run_with_the_copied_settings(stages: list[Stage], pyproject: dict[str, Any]) -> None:
    final = stages[-1]
    entrypoint = final.all("ENTRYPOINT")[-1].exec_form()
    command = final.all("CMD")[-1].exec_form()
    assert entrypoint == ["autoscaler"]
    assert command[0] == "run"
    scripts = pyproject["project"]["scripts"]
    assert scripts["autoscaler"] == "autoscaler.cli:main"
    config = command[command.index("--config") + 1]
    copies = {
        shlex.split(c.arguments)[-1]: shlex.split(c.arguments)[:-1] for c in final.all("COPY") if "from" not in c.flags
    }
    assert copies.get(config) == ["config/autoscaler.yaml"], "the settings file --config names is copied"
    assert (ROOT / "config" / "autoscaler.yaml").is_file()
    port = yaml.safe_load((ROOT / "config" / "autoscaler.yaml").read_text())["http"]["port"]
    assert [e.arguments for e in final.all("EXPOSE")] == [str(port)]


def test_only_the_built_wheel_and_its_runtime_dependencies(stages: list[Stage], pyproject: dict[str, Any]) -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    extras = pyproject["project"]["optional-dependencies"]
    # Every extra's packages; the project's own name, which the dev extra names ("autoscaler[emulator]": the
    # API emulator's packages, for the tests), is not one.
    extra_packages = {re.split(r"[<>=\[ ]", d)[0].lower() for packages in extras.values() for d in packages} - {
        pyproject["project"]["name"]
    }
    assert {"pytest", "jsonschema", "fastjsonschema", "protobuf", "matplotlib"} <= extra_packages
    runtime = {re.split(r"[<>=\[ ;]", d)[0].lower() for d in pyproject["project"]["dependencies"]}
    assert not extra_packages & runtime, "a package of an extra is a runtime dependency too"
    instructions = [i for s in stages for i in s.instructions]
    for instruction in instructions:
        # Removing a tool from the image (`pip uninstall --yes pip setuptools wheel`) is not installing one.
        lowered = " && ".join(
            part for part in re.split(r"&&|;", instruction.arguments.lower()) if "pip uninstall" not in part
        )
        assert "[dev" not in lowered and ".[" not in lowered, f"an extra is installed: {instruction.arguments}"
        assert "autoscaler[" not in lowered, f"an extra is installed: {instruction.arguments}"
        for tool in (*DEV_TOOLS, *extra_packages):
            assert tool not in lowered, f"{tool} in {instruction.keyword} {instruction.arguments}"
        assert "requirements" not in lowered and "--editable" not in lowered and " -e " not in f" {lowered} "
    build, final = stages[0], stages[-1]
    # The build stage makes wheels of the package itself (no extras): its runtime dependencies come along.
    wheels = pip_commands(build, "wheel")
    assert wheels and all(w[-1] == "." for w in wheels), wheels
    # The runtime stage installs the package from those wheels only, and nothing else.
    installs = pip_commands(final, "install")
    assert installs, "the runtime stage installs the package"
    for words in installs:
        assert "--no-index" in words, words
        assert [w for w in words if not w.startswith("-") and not w.startswith("/")] == ["autoscaler"], words
    mounts = [r.flags.get("mount", "") for r in final.all("RUN") if "mount" in r.flags]
    copied = [c for c in final.all("COPY") if c.flags.get("from")]
    sources = [m for m in mounts if f"from={build.name}" in m] + [c.arguments for c in copied]
    assert sources and all("/wheels" in s for s in sources), "only the build stage's wheels reach the runtime stage"
    assert "pytest" not in text


def dockerignore() -> Callable[[str], bool]:
    """Whether .dockerignore lets a path (relative to the repository) into the build context."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def included(path: str) -> bool:
        keep = True
        for pattern in patterns:
            negate = pattern.startswith("!")
            bare = pattern.lstrip("!").rstrip("/")
            if (
                fnmatch.fnmatch(path, bare)
                or path.startswith(bare + "/")
                or any(
                    fnmatch.fnmatch(part, bare.removeprefix("**/"))
                    for part in path.split("/")
                    if bare.startswith("**/")
                )
            ):
                keep = negate
        return keep

    return included


def test_build_context_holds_what_the_copies_need(stages: list[Stage]) -> None:
    """.dockerignore keeps the context small (no tests, no .git) but lets every COPY source through."""
    included = dockerignore()
    for stage in stages:
        for copy in stage.all("COPY"):
            if copy.flags.get("from"):
                continue
            for source in shlex.split(copy.arguments)[:-1]:
                assert included(source.rstrip("/")), f"{source} is excluded by .dockerignore"
                assert (ROOT / source).exists(), source
    assert not included("tests/test_dockerfile.py") and not included(".git/config")


def test_the_image_holds_no_test_machinery(stages: list[Stage], pyproject: dict[str, Any], tmp_path: Path) -> None:
    """The packages the build stage's wheel gets, found as setuptools finds them (pyproject's rule) in what
    the build stage copies from the context: the product alone, without the API emulator or the sandbox
    (which `pip install -e .` in a clone does get)."""
    included = dockerignore()
    build = stages[0]
    for copy in build.all("COPY"):
        if copy.flags.get("from"):
            continue
        *sources, _ = shlex.split(copy.arguments)
        for source in sources:
            origin = ROOT / source
            files = [origin] if origin.is_file() else sorted(p for p in origin.rglob("*") if p.is_file())
            for path in files:
                relative = path.relative_to(ROOT).as_posix()
                if included(relative):
                    (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, tmp_path / relative)
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    in_image = set(setuptools.find_packages(where=str(tmp_path), include=include))
    in_clone = set(setuptools.find_packages(where=str(ROOT), include=include))
    assert {"autoscaler", "autoscaler.cli", "autoscaler.service", "autoscaler.kube"} <= in_image
    assert {"kube_emulator", "autoscaler_sandbox"} <= in_clone
    assert sorted(p for p in in_image if p.split(".")[0] != "autoscaler") == []
    assert not included("kube_emulator/server.py") and not included("autoscaler_sandbox/demo_run.py")


def test_parser_reads_continuations_and_flags() -> None:
    stages = parse(
        "# syntax=docker/dockerfile:1\nFROM a AS b\nRUN --mount=type=bind,from=b x \\\n    # note\n"
        "    && y\nFROM c\nUSER 1:1\n"
    )
    assert [(s.image, s.name) for s in stages] == [("a", "b"), ("c", None)]
    run = stages[0].instructions[0]
    assert run.flags == {"mount": "type=bind,from=b"} and run.arguments == "x && y"


def test_the_benchmark_runs_the_service_with_the_images_environment(stages: list[Stage]) -> None:
    """bench/service.py measures the service as the image runs it: the image's ENV that tunes the process
    (glibc's malloc arenas) is the benchmark's too."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from servicebench.process import IMAGE_ENV
    finally:
        sys.path.remove(str(ROOT / "bench"))
    image_env = dict(pair.split("=", 1) for i in stages[-1].all("ENV") for pair in shlex.split(i.arguments))
    assert {"MALLOC_ARENA_MAX": image_env["MALLOC_ARENA_MAX"]} == IMAGE_ENV
