"""Query templates: PromQL with ``<<placeholder>>`` slots filled per target.

``<<…>>`` never occurs in valid PromQL (there is no shift operator) and, unlike ``{{…}}``, does not
collide with Helm or Go templates around the config, which is why prometheus-adapter chose it too.

Placeholders (every value is escaped by :mod:`autoscaler.prometheus.promql`, so it cannot inject):

==========================  ==================================================================
``<<scope>>``               label matchers selecting the target's namespace:
                            ``namespace="prod"``; when targets are batched,
                            ``namespace=~"prod|staging"``, and where a batch reads a
                            small part of a namespace, its pods' names too:
                            ``namespace="prod", pod=~"web-1|web-2"``. Use it inside
                            ``{…}``, on series that carry the pod label.
``<<namespace>>``           the target's namespace as a string literal: ``"prod"``
``<<name>>``                the target's (autoscaler object's) name: ``"web"``
``<<target_kind>>``         the scale target's kind: ``"Deployment"``
``<<target_name>>``         the scale target's name: ``"web"``
``<<selector>>``            the scale selector as label matchers: ``app="web",tier=~"a|b"``
``<<pods>>``                the target's pod names as a regex literal: ``"web-1|web-2"``
``<<window>>``              the CPU rate window as a PromQL duration: ``120s``
``<<container>>``           the container of a ContainerResource metric: ``"app"``
``<<resource>>``            the resource name of a Resource metric: ``"cpu"``
``<<metric>>``              the metric's name: ``"http_requests"``
``<<pod_label>>`` …         the configured label names (``pod``, ``namespace``, ``container``)
==========================  ==================================================================

A template's *batch key* is its text rendered for one target with ``<<scope>>`` left open: targets
whose keys are equal can share one query whose scope covers all their namespaces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.values.fields import did_you_mean

PLACEHOLDERS = (
    "scope",
    "namespace",
    "name",
    "target_kind",
    "target_name",
    "selector",
    "pods",
    "window",
    "container",
    "resource",
    "metric",
    "pod_label",
    "namespace_label",
    "container_label",
)
# Placeholders whose value differs from one target to the next (apart from ``scope``): a template
# using one of them is batched only with targets that give it the same value.
PER_TARGET_PLACEHOLDERS = frozenset({"namespace", "name", "target_kind", "target_name", "selector", "pods"})

_PLACEHOLDER = re.compile(r"<<\s*([^<>\s]*)\s*>>")

# Stands for ``<<scope>>`` in batch keys; cannot occur in a rendered value (all are escaped).
SCOPE_SLOT = "\x00scope\x00"

CPU_TEMPLATE = (
    "sum by (<<namespace_label>>, <<pod_label>>, <<container_label>>) ("
    'rate(container_cpu_usage_seconds_total{<<scope>>, <<container_label>>!="", '
    '<<container_label>>!="POD"}[<<window>>]))'
)
MEMORY_TEMPLATE = (
    "sum by (<<namespace_label>>, <<pod_label>>, <<container_label>>) ("
    'container_memory_working_set_bytes{<<scope>>, <<container_label>>!="", '
    '<<container_label>>!="POD"})'
)


class TemplateError(ValueError):
    """The template uses a placeholder that does not exist, or a malformed one."""


@dataclass(frozen=True, slots=True)
class QueryTemplate:
    text: str
    placeholders: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> QueryTemplate:
        problems: list[str] = []
        names: set[str] = set()
        for match in _PLACEHOLDER.finditer(text):
            name = match.group(1)
            if name in PLACEHOLDERS:
                names.add(name)
                continue
            hint = did_you_mean(name, PLACEHOLDERS)
            problems.append(f"unknown placeholder {match.group(0)}" + (f" (did you mean <<{hint}>>?)" if hint else ""))
        leftover = _PLACEHOLDER.sub("", text)
        if "<<" in leftover or ">>" in leftover:
            problems.append("unterminated placeholder: '<<' and '>>' must enclose a placeholder name")
        if problems:
            raise TemplateError("; ".join(problems) + f" (placeholders: {', '.join(PLACEHOLDERS)})")
        return cls(text=text, placeholders=frozenset(names))

    def render(self, values: Mapping[str, str]) -> str:
        """Fill every placeholder; ``values`` must hold each used one (already escaped)."""

        def substitute(match: re.Match[str]) -> str:
            return values[match.group(1)]

        return _PLACEHOLDER.sub(substitute, self.text)


def validate_template(text: str) -> list[str]:
    """Problems with a query template (empty when it is valid), for config validation up front."""
    try:
        QueryTemplate.parse(text)
    except TemplateError as exc:
        return [str(exc)]
    return []
