"""The monitoring component's expressions, and the metric names a PromQL expression reads (a small reader
written for the tests: it knows PromQL's shape, not the service's metrics)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.manifests import MONITORING, load_documents

_KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "inf",
        "nan",
    }
)
# Grafana variables, replaced by what "All" selects.
_VARIABLES = {"$namespace": ".+", "$target": ".+"}


def rule_groups() -> list[dict[str, Any]]:
    rule = load_documents(MONITORING / "prometheusrule.yaml")[0]
    return list(rule["spec"]["groups"])


def alerts() -> dict[str, str]:
    """Alert name → expression."""
    return {rule["alert"]: rule["expr"] for group in rule_groups() for rule in group["rules"] if "alert" in rule}


def dashboard() -> dict[str, Any]:
    config_map = load_documents(MONITORING / "grafana-dashboard.yaml")[0]
    return dict(json.loads(config_map["data"]["autoscaler.json"]))


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])


def dashboard_expressions() -> dict[str, str]:
    """``panel title / refId`` → expression, with the template variables set to "All"."""
    found = {}
    for panel in _panels(dashboard()["panels"]):
        for target in panel.get("targets") or []:
            expr = target["expr"]
            for variable, value in _VARIABLES.items():
                expr = expr.replace(variable, value)
            found[f"{panel['title']} / {target['refId']}"] = expr
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names an expression selects: identifiers that are not functions, aggregations, keywords,
    label names (in matchers and in by/without/on/ignoring/group_* lists) or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group(0)
        if word in _KEYWORDS or text[match.end() :].lstrip().startswith("("):
            continue
        names.add(word)
    return names
