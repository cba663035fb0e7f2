"""Label and field selector syntax and semantics (apimachinery's, including the edge cases)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube_emulator.errors import ApiError
from kube_emulator.selectors import (
    field_value,
    parse_field_selector,
    parse_label_selector,
    selector_from_label_selector,
)

LABELS = {"app": "web", "tier": "front", "version": "3", "example.com/team": "a", "empty": ""}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),  # != also selects objects without the label
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("missing notin (db)", True),
        ("app notin (web, db)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("example.com/team=a", True),
        ("empty=", True),
        ("version>2", True),
        ("version<3", False),
        (" app = web , !missing ", True),
        ("app in ()", False),  # upstream reads "()" as the empty value
        ("empty in ()", True),
        ("empty in (,x)", True),
        ("app in (in,web)", True),  # "in" is a value inside a set
    ],
)
def test_label_selector_semantics(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


@pytest.mark.parametrize(
    "selector",
    [
        "=web",
        "app in (web",
        "app web",
        "!app=web",
        "app=web x",
        "app=(",
        "a/b/c=d",
        "app>x",
        "app=web,",
        "app in (a b)",
        "app=a=b",
        "-app=x",
        "version>-1",
        "app=" + "x" * 64,
    ],
)
def test_malformed_label_selectors_are_400(selector: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_label_selector(selector)
    assert caught.value.code == 400


def test_parsed_selectors_render_sorted_by_key_as_upstream() -> None:
    assert str(parse_label_selector("tier notin (b,a), app==web, !x, y, v>3")) == (
        "app==web,tier notin (a,b),v>3,!x,y"  # by key, the "!" not counted
    )


def test_selector_errors_read_like_the_api_servers() -> None:
    with pytest.raises(ApiError) as caught:
        parse_label_selector("app web")
    assert caught.value.message == "unable to parse requirement: found 'web', expected: in, notin, =, ==, !=, gt, lt"
    with pytest.raises(ApiError) as caught:
        parse_label_selector("app>x")
    assert caught.value.message == (
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, "
        "the value must be an integer"
    )


def test_label_selector_object_renders_like_label_selector_as_selector() -> None:
    selector = selector_from_label_selector(
        {
            "matchLabels": {"tier": "front", "app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "canary"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "owner", "operator": "Exists"},
            ],
        }
    )
    assert str(selector) == "app=web,env in (canary,prod),!legacy,owner,tier=front,zone notin (b)"
    assert selector_from_label_selector(None) is None
    assert str(selector_from_label_selector({})) == ""


def test_bad_match_expression_is_rejected() -> None:
    with pytest.raises(ValueError, match="values set can't be empty"):
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    with pytest.raises(ValueError, match="not a valid"):
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "Equals"}]})


_names = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)


@given(
    st.lists(
        st.one_of(
            st.tuples(_names, st.sampled_from(["=", "!="]), _names).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
            st.tuples(_names, st.sampled_from(["in", "notin"]), st.lists(_names, min_size=1, max_size=3)).map(
                lambda t: f"{t[0]} {t[1]} ({','.join(t[2])})"
            ),
            _names,
            _names.map(lambda name: f"!{name}"),
        ),
        max_size=4,
    ),
    st.dictionaries(_names, _names, max_size=4),
)
def test_rendered_selectors_parse_back_to_the_same_meaning(parts: list[str], labels: dict[str, str]) -> None:
    selector = parse_label_selector(",".join(parts))
    reparsed = parse_label_selector(str(selector))
    assert reparsed.matches(labels) == selector.matches(labels)


def test_field_selectors() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Running"}, "spec": {}}
    value = lambda field: field_value(pod, field)  # noqa: E731
    assert parse_field_selector("metadata.name=p,status.phase=Running").matches(value)
    assert parse_field_selector("status.phase!=Pending").matches(value)
    assert not parse_field_selector("metadata.namespace==other").matches(value)
    assert parse_field_selector("spec.nodeName=").matches(value)  # missing compares as ""
    assert parse_field_selector(r"metadata.name=a\,b").requirements[0].value == "a,b"
    with pytest.raises(ApiError):
        parse_field_selector("metadata.name")
