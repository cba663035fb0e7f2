"""The README's links and its one counted claim stay true: every relative link names a file of the repository
(and a heading of it, where the link has an ``#anchor``), and the number of upstream test cases it cites is the
number in ``tests/cases/upstream/``. (Its quick start is run by ``tests/test_quickstart.py``.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
UPSTREAM_CASES = ROOT / "tests" / "cases" / "upstream"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation other than ``-`` and ``_`` dropped, spaces as
    ``-``."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", markdown.read_text(), flags=re.S | re.M)  # no headings in code blocks
    return {github_anchor(match) for match in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def relative_links(readme: str) -> list[str]:
    return [link for link in LINK.findall(readme) if not re.match(r"[a-z]+:", link)]


def test_every_relative_link_of_the_readme_names_a_file_and_heading_that_exist() -> None:
    links = relative_links(README.read_text())
    assert links, "the README has no relative link: the pattern no longer finds them"
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and anchor not in anchors(target):
            broken.append(f"{link}: {path or 'README.md'} has no heading #{anchor}")
    assert not broken, broken


def test_the_upstream_case_count_the_readme_cites_is_the_number_of_cases() -> None:
    cases = sum(1 for path in UPSTREAM_CASES.rglob("*") if path.is_file())
    citations = re.findall(r"\b(\d+)(?= cases| of upstream's own test cases)", README.read_text())
    cited = {int(number) for number in citations}
    assert cited == {cases}, f"the README cites {sorted(cited)} upstream cases; tests/cases/upstream/ holds {cases}"


def test_github_anchor_matches_githubs_rule() -> None:
    assert github_anchor("More than one Prometheus: named backends") == "more-than-one-prometheus-named-backends"
    assert github_anchor("HVPA and the HPA `behavior`") == "hvpa-and-the-hpa-behavior"
    assert github_anchor("The cut-over checklist") == "the-cut-over-checklist"
