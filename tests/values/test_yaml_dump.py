"""What the commands write as YAML (``autoscaler convert``, ``autoscaler scenario``) reads back exactly."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.values.yaml_files import dump_yaml, parse_yaml_text

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(document=st.dictionaries(st.text(), json_values, max_size=5))
def test_a_dumped_document_reads_back_exactly(document: dict[str, Any]) -> None:
    assert parse_yaml_text(dump_yaml(document), "dumped.yaml") == document


def test_unicode_line_breaks_are_quoted_and_text_stays_readable() -> None:
    # PyYAML alone (allow_unicode) writes U+0085 raw in a single-quoted scalar and reads it back as a space.
    assert dump_yaml({"message": "a\x85b"}) == 'message: "a\\Nb"\n'
    assert dump_yaml({"name": "größe"}) == "name: größe\n"
    assert dump_yaml({"query": "sum(rate(x[1m]))\n/ 2\n"}) == "query: |\n  sum(rate(x[1m]))\n  / 2\n"
