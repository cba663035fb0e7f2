"""Escaping, selectors and templates (pure)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.prometheus.promql import (
    MATCH_NOTHING,
    SelectorError,
    regex_alternation,
    regex_escape,
    selector_matchers,
    string_literal,
)
from autoscaler.prometheus.templates import CPU_TEMPLATE, MEMORY_TEMPLATE, QueryTemplate, TemplateError

_GO_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}


def go_unquote(literal: str) -> str:
    """Go's strconv.Unquote for the escapes string_literal emits (PromQL's lexer uses it)."""
    assert literal[0] == literal[-1] == '"'
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        assert ch != '"' and ch != "\n", "unescaped quote or newline would end or break the string"
        if ch != "\\":
            out.append(ch)
            i += 1
        elif body[i + 1] == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            out.append(_GO_ESCAPES[body[i + 1]])
            i += 2
    return "".join(out)


@given(st.text())
def test_string_literal_round_trips_and_cannot_end_early(value: str) -> None:
    assert go_unquote(string_literal(value)) == value


@given(st.text())
def test_regex_escape_is_go_quote_meta(value: str) -> None:
    """Exactly the characters Go's regexp.QuoteMeta escapes, each with one backslash."""
    assert regex_escape(value) == "".join("\\" + ch if ch in "\\.+*?()|[]{}^$" else ch for ch in value)


@given(st.lists(st.text(min_size=1), min_size=1, max_size=5), st.text())
def test_regex_alternation_matches_exactly_its_values(values: list[str], other: str) -> None:
    pattern = re.compile(regex_alternation(values), re.DOTALL)
    for value in values:
        assert pattern.fullmatch(value)
    assert bool(pattern.fullmatch(other)) == (other in values)


def test_empty_alternation_is_the_match_nothing_pattern() -> None:
    # test_live checks on real servers (Prometheus, VictoriaMetrics) that it matches no value, not even "".
    assert regex_alternation([]) == MATCH_NOTHING == "\\b\\B"
    assert not any(re.fullmatch(MATCH_NOTHING, value) for value in ("", "a", "(", "]", " ", "\\b"))


@pytest.mark.parametrize(
    "selector, matchers",
    [
        ("", ""),
        ("app=web", 'app="web"'),
        ("app==web,tier!=db", 'app="web",tier!="db"'),
        ("app.kubernetes.io/name=web", 'app_kubernetes_io_name="web"'),
        ("tier in (front, back),env notin (dev)", 'tier=~"back|front",env!~"dev"'),
        ("canary,!legacy", 'canary!="",legacy=""'),
        ("version=1.2", 'version="1.2"'),
    ],
)
def test_selector_matchers(selector: str, matchers: str) -> None:
    assert selector_matchers(selector) == matchers


@pytest.mark.parametrize("selector", ["a>1", "a in (b", "a=b,,c=d", "x y"])
def test_selector_errors(selector: str) -> None:
    with pytest.raises(SelectorError):
        selector_matchers(selector)


def test_builtin_templates_parse_and_render() -> None:
    values = {
        "scope": 'namespace="a"',
        "window": "2m",
        "pod_label": "pod",
        "namespace_label": "namespace",
        "container_label": "container",
    }
    assert QueryTemplate.parse(CPU_TEMPLATE).render(values) == (
        'sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{namespace="a", '
        'container!="", container!="POD"}[2m]))'
    )
    assert "container_memory_working_set_bytes" in QueryTemplate.parse(MEMORY_TEMPLATE).render(values)


@pytest.mark.parametrize(
    "text, message",
    [
        ("m{<<nmespace>>}", "unknown placeholder <<nmespace>> (did you mean <<namespace>>?)"),
        ("m{<<scope>}", "unterminated placeholder"),
        ("m{<<>>}", "unknown placeholder <<>>"),
    ],
)
def test_template_errors(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        QueryTemplate.parse(text)


def test_template_placeholders_allow_spaces() -> None:
    template = QueryTemplate.parse("m{<< scope >>} < 3")
    assert template.placeholders == {"scope"}
    assert template.render({"scope": 'a="b"'}) == 'm{a="b"} < 3'
