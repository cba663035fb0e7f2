"""Reading YAML files with errors a person can act on (never a traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from autoscaler.core.fields import FieldError, SpecError


def load_yaml_file(path: str) -> Any:
    """One YAML document; ``SpecError`` when the file cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([FieldError(path, f"cannot read file: {exc.strerror or exc}")]) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError([FieldError(path, yaml_problem(exc))]) from exc


def load_yaml_documents(path: str) -> list[Any]:
    """Every document of a multi-document YAML file (``---`` separated), empty ones skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([FieldError(path, f"cannot read file: {exc.strerror or exc}")]) from exc
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise SpecError([FieldError(path, yaml_problem(exc))]) from exc


def yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"invalid YAML{where}: {problem}"
