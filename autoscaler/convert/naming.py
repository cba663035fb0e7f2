"""The adapter's naming and association rules: which Prometheus series a rule serves under an API
metric name, and which Prometheus label stands for a Kubernetes resource.

The adapter learns series names by asking Prometheus (``seriesQuery``) and maps each forward
(``name.matches`` → ``name.as``). Without asking, the converter finds the series behind an API name
by candidates — the metric name written in ``seriesQuery``, the API name itself, and the rule's naming
run backwards (:mod:`autoscaler.convert.naming_inverse`: literal text around capture groups, ``(.*)`` or an
alternation such as ``(live|peak)``) — and keeps a candidate only if the rule's forward mapping, filters
and ``seriesQuery`` name matchers give back exactly that API name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from autoscaler.convert.adapter_config import DiscoveryRule, GroupResource, ResourceMapping
from autoscaler.convert.gotemplate import TemplateProblem, render
from autoscaler.convert.naming_inverse import inverse_candidates, template_parts

# kind → (resource, group) for kinds an HPA's describedObject commonly names; others are guessed
# the way Kubernetes names resources (lower-case, plural).
_KINDS = {
    "Pod": "pod",
    "Service": "service",
    "Namespace": "namespace",
    "Node": "node",
    "Ingress": "ingress",
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "ReplicaSet": "replicaset",
    "DaemonSet": "daemonset",
    "Job": "job",
    "CronJob": "cronjob",
    "PersistentVolumeClaim": "persistentvolumeclaim",
    "PersistentVolume": "persistentvolume",
    "ReplicationController": "replicationcontroller",
    "HorizontalPodAutoscaler": "horizontalpodautoscaler",
    "Route": "route",
}
_PLURAL_EXCEPTIONS = {"ingress": "ingresses", "endpoints": "endpoints"}
_NAME_IN_QUERY = re.compile(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{.*\})?\s*$", re.S)
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_ESCAPED = re.compile(r"\\(.)")


def singular_resource(kind_or_resource: str) -> str:
    """``Deployment``, ``deployments``, ``deployment`` → ``deployment``."""
    if kind_or_resource in _KINDS:
        return _KINDS[kind_or_resource]
    lower = kind_or_resource.lower()
    for singular, plural in _PLURAL_EXCEPTIONS.items():
        if lower == plural:
            return singular
    if lower.endswith("ies"):
        return lower[:-3] + "y"
    if lower.endswith("sses") or lower.endswith("ches"):
        return lower[:-2]
    if lower.endswith("s") and not lower.endswith("ss"):
        return lower[:-1]
    return lower


def group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def label_for_resource(mapping: ResourceMapping, group: str, kind_or_resource: str) -> str | None:
    """The Prometheus label the adapter uses for a group-resource (an override, else the template),
    or None when the rule cannot name one (the adapter fails such a request)."""
    singular = singular_resource(kind_or_resource)
    for label, resource in mapping.overrides:
        if _same_resource(resource, group, singular):
            return label
    if not mapping.template:
        return None
    sanitized = group.replace(".", "_").replace("-", "_")
    try:
        label = render(mapping.template, {"Group": sanitized, "Resource": singular})
    except TemplateProblem:
        return None
    return label or None


def _same_resource(resource: GroupResource, group: str, singular: str) -> bool:
    if singular_resource(resource.resource) != singular:
        return False
    # An override without a group is resolved by the adapter's REST mapper, so any group matches.
    return not resource.group or resource.group == group


def go_expand(template: str, match: re.Match[str]) -> str:
    """Go's ``Regexp.Expand``: each group reference of ``template`` (:func:`template_parts`) replaced by what
    ``match`` captured (so ``$1x`` is group "1x", which is empty)."""
    return "".join(part if isinstance(part, str) else _group(match, part[0]) for part in template_parts(template))


def _group(match: re.Match[str], name: str) -> str:
    try:
        value = match.group(int(name)) if name.isdigit() else match.group(name)
    except IndexError:  # no such group: Go expands it to nothing
        return ""
    return value or ""


def name_as(rule: DiscoveryRule) -> str:
    """``name.as`` with the adapter's default: ``$0`` without capture groups, ``$1`` with one."""
    if rule.name_as:
        return rule.name_as
    groups = re.compile(rule.name_matches or ".*").groups
    return "$0" if groups == 0 else "$1"


def api_name(rule: DiscoveryRule, series: str) -> str | None:
    """The API name the adapter gives ``series`` under ``rule``, or None if the rule skips it."""
    if not series_selected(rule, series):
        return None
    match = re.search(rule.name_matches or ".*", series)
    if match is None:
        return None
    template = name_as(rule)
    if template == "$0":
        return match.group(0)
    return go_expand(template, match)


def series_selected(rule: DiscoveryRule, series: str) -> bool:
    """Whether ``series`` passes the rule's ``seriesFilters``, its name filter and the metric-name
    matchers of its ``seriesQuery`` (Prometheus anchors those regexes; filters are unanchored)."""
    for positive, pattern in rule.series_filters:
        if (re.search(pattern, series) is not None) != positive:
            return False
    if rule.name_matches and re.search(rule.name_matches, series) is None:
        return False
    return all(_name_matcher_holds(op, value, series) for op, value in name_matchers(rule.series_query))


def name_matchers(series_query: str) -> list[tuple[str, str]]:
    """The ``__name__`` matchers of a series selector (a leading metric name counts as ``=``)."""
    found = _NAME_IN_QUERY.match(series_query)
    matchers: list[tuple[str, str]] = []
    body = series_query.strip()
    if found is not None:
        matchers.append(("=", found.group(1)))
        body = found.group(2) or ""
    if body.startswith("{") and body.endswith("}"):
        for label, op, value in _matchers(body[1:-1]):
            if label == "__name__":
                matchers.append((op, value))
    return matchers


def _matchers(text: str) -> Iterator[tuple[str, str, str]]:
    position = 0
    while position < len(text):
        match = _MATCHER.match(text, position)
        if match is None:
            return
        yield match.group(1), match.group(2), _ESCAPED.sub(lambda m: m.group(1), match.group(3))
        position = match.end()


def _name_matcher_holds(op: str, value: str, series: str) -> bool:
    if op == "=":
        return series == value
    if op == "!=":
        return series != value
    try:
        full = re.fullmatch(value, series) is not None
    except re.error:
        return True  # Prometheus would refuse the query; the adapter then serves nothing new
    return full if op == "=~" else not full


def series_candidates(rule: DiscoveryRule, metric: str) -> list[str]:
    """Series ``rule`` would serve as API metric ``metric`` if Prometheus has them (see the module's
    docstring), most likely first."""
    found = [c for c in _candidates(rule, metric) if api_name(rule, c) == metric]
    return list(dict.fromkeys(found))


def series_for(rule: DiscoveryRule, metric: str, known: frozenset[str] | None = None) -> str | None:
    """The series ``rule`` serves as ``metric``: the first candidate Prometheus has (``known``: the
    metric names it holds), or without ``known`` the first candidate at all; None if there is none."""
    for candidate in series_candidates(rule, metric):
        if known is None or candidate in known:
            return candidate
    return None


def _candidates(rule: DiscoveryRule, metric: str) -> Iterator[str]:
    for op, value in name_matchers(rule.series_query):
        if op == "=":
            yield value
    yield metric
    if rule.name_matches:  # the naming run backwards: ^http_(.*)_total$, ^jvm_threads_(live|peak)_threads$
        yield from inverse_candidates(rule.name_matches, name_as(rule), metric)
    literal = _literal(rule.name_matches)
    if literal is not None:
        yield literal


def _literal(pattern: str) -> str | None:
    """The one string an anchored pattern without special characters matches (``^foo_total$``)."""
    core = pattern.removeprefix("^").removesuffix("$")
    if not pattern.startswith("^") or not pattern.endswith("$"):
        return None
    if re.search(r"(?<!\\)[()\[\].*+?{}|^$]", core):
        return None
    return _ESCAPED.sub(r"\1", core)
