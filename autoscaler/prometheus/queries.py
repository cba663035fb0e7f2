"""Query building: the PromQL one metric of one target is read with.

A metric's template is its own ``query``, or for cpu and memory the built-in query (or the settings'
override of it). It is parsed once and rendered per target: every placeholder filled with an escaped
value, and ``<<scope>>`` with label matchers for a list of namespaces (a batch) or for one target's own
pods. This is apart from the planning (:mod:`autoscaler.prometheus.planning`) because what a query says
does not depend on which targets share it. A metric that cannot be given a query raises
:class:`Unplannable` here, saying why; the reader turns that into the metric's failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from autoscaler.core.spec import RESOURCE_METRIC_TYPES, CrossVersionObjectReference, MetricSpec
from autoscaler.prometheus.extract import LabelNames
from autoscaler.prometheus.promql import SelectorError, regex_literal, selector_matchers, string_literal
from autoscaler.prometheus.settings import PrometheusSettings
from autoscaler.prometheus.templates import CPU_TEMPLATE, MEMORY_TEMPLATE, QueryTemplate, TemplateError

# Placeholders whose values do not depend on the target or metric: a template using only these renders
# to the same text for every target.
SHARED_PLACEHOLDERS = frozenset({"scope", "window", "pod_label", "namespace_label", "container_label"})
_RENDERED_REMEMBERED = 1000  # shared renderings kept (forgotten all at once past this)


@dataclass(slots=True, init=False, unsafe_hash=True)
class TargetQuery:
    """One target's needs for one sync."""

    namespace: Final[str]
    name: Final[str]
    scale_target: Final[CrossVersionObjectReference]
    selector: Final[str]
    pod_names: Final[Sequence[str]]
    metrics: Final[Sequence[MetricSpec]]
    # Pods the service knows in the namespace, its targets' or not (0: not known). Where a batch's
    # targets read only a small part of a namespace, its per-pod query names their pods instead of
    # asking for the whole namespace (see :mod:`autoscaler.prometheus.planning`).
    namespace_pods: Final[int]

    def __init__(
        self,
        namespace: str,
        name: str,
        scale_target: CrossVersionObjectReference,
        selector: str,
        pod_names: Sequence[str],
        metrics: Sequence[MetricSpec],
        namespace_pods: int = 0,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.scale_target = scale_target
        self.selector = selector
        self.pod_names = pod_names
        self.metrics = metrics
        self.namespace_pods = namespace_pods


class Unplannable(Exception):
    """The metric cannot be given a query; the message is its failure."""


class QueryBuilder:
    """Templates parsed once per text, and rendered for targets (the shared ones once per scope)."""

    def __init__(self, settings: PrometheusSettings, names: LabelNames) -> None:
        self._settings = settings
        self._names = names
        self._templates: dict[str, QueryTemplate | TemplateError] = {}
        self._rendered: dict[tuple[str, str], str] = {}  # see render

    def template_for(self, spec: MetricSpec) -> QueryTemplate:
        """The parsed template ``spec`` is read with; raises :class:`Unplannable` when there is none."""
        return self._template(self._template_text(spec))

    def _template_text(self, spec: MetricSpec) -> str:
        if spec.query:
            return spec.query
        if spec.type in RESOURCE_METRIC_TYPES:
            if spec.name == "cpu":
                return self._settings.cpu_query or CPU_TEMPLATE
            if spec.name == "memory":
                return self._settings.memory_query or MEMORY_TEMPLATE
            raise Unplannable(f"there is no built-in query for resource {spec.name!r}; set the metric's query")
        raise Unplannable("the metric has no query")

    def _template(self, text: str) -> QueryTemplate:
        cached = self._templates.get(text)
        if cached is None:
            try:
                cached = QueryTemplate.parse(text)
            except TemplateError as exc:
                cached = exc
            self._templates[text] = cached
        if isinstance(cached, TemplateError):
            raise Unplannable(f"invalid query template: {cached}")
        return cached

    def render(self, template: QueryTemplate, target: TargetQuery, spec: MetricSpec, *, scope: str) -> str:
        """``template`` filled in for ``spec`` of ``target``, with ``scope`` as its ``<<scope>>``."""
        if template.placeholders <= SHARED_PLACEHOLDERS:
            # The same text for every target (the built-in queries, and most <<scope>> ones): rendered
            # once, not once per target and sync.
            key = (template.text, scope)
            rendered = self._rendered.get(key)
            if rendered is None:
                if len(self._rendered) > _RENDERED_REMEMBERED:
                    self._rendered.clear()
                rendered = self._rendered[key] = self._render_for(template, target, spec, scope=scope)
            return rendered
        return self._render_for(template, target, spec, scope=scope)

    def _render_for(self, template: QueryTemplate, target: TargetQuery, spec: MetricSpec, *, scope: str) -> str:
        names = self._names
        values: dict[str, str] = {}
        for name in template.placeholders:
            if name == "scope":
                values[name] = scope
            elif name == "namespace":
                values[name] = string_literal(target.namespace)
            elif name == "name":
                values[name] = string_literal(target.name)
            elif name == "target_kind":
                values[name] = string_literal(target.scale_target.kind)
            elif name == "target_name":
                values[name] = string_literal(target.scale_target.name)
            elif name == "selector":
                try:
                    values[name] = selector_matchers(target.selector)
                except SelectorError as exc:
                    raise Unplannable(f"the query uses <<selector>>, but {exc}") from None
            elif name == "pods":
                values[name] = regex_literal(target.pod_names)
            elif name == "window":
                values[name] = self._settings.cpu_rate_window_text
            elif name == "container":
                values[name] = string_literal(spec.container or "")
            elif name in ("resource", "metric"):
                values[name] = string_literal(spec.name)
            elif name == "pod_label":
                values[name] = names.pod
            elif name == "namespace_label":
                values[name] = names.namespace
            elif name == "container_label":
                values[name] = names.container
        return template.render(values)

    def namespace_scope(self, namespaces: Sequence[str]) -> str:
        """``<<scope>>`` for every pod of ``namespaces``."""
        label = self._names.namespace
        if len(namespaces) == 1:
            return f"{label}={string_literal(namespaces[0])}"
        return f"{label}=~{regex_literal(namespaces)}"

    def target_scope(self, target: TargetQuery) -> str:
        """``<<scope>>`` for ``target``'s own pods (unbatched reads)."""
        return self.pods_scope([target.namespace], target.pod_names)

    def pods_scope(self, namespaces: Sequence[str], pods: Iterable[str]) -> str:
        """``<<scope>>`` for the pods named ``pods`` in ``namespaces`` (a literal alternation, which
        Prometheus looks up in its index name by name rather than matching every pod name it has)."""
        return f"{self.namespace_scope(namespaces)}, {self._names.pod}=~{regex_literal(pods)}"
