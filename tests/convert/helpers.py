"""Shared bits of the convert tests: the test data, and reading what convert wrote back the way the
service reads a ScalingTarget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from autoscaler.backtest.target import BacktestTarget, load_target

DATA = Path(__file__).parent / "data"
ADAPTER_CONFIG = DATA / "adapter-config.yaml"
HPAS = DATA / "hpas.yaml"
SCALED_OBJECTS = DATA / "scaledobjects.yaml"


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def load_written(tmp_path: Path, document: dict[str, Any], name: str = "target.yaml") -> BacktestTarget:
    """A converted object as ``autoscaler backtest``/``run`` would load it: validated, queries required."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return load_target(str(path))
