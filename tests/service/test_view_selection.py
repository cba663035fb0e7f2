"""The cached view's map from a pod to the targets selecting it (who else selects my pods), against the pod
index it is built on (tests/kube/test_pod_index.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.kube.labels import LabelSelector, parse_label_selector
from autoscaler.kube.pods import PodIndex
from autoscaler.kube.records import PodRecord
from autoscaler.service.cluster.targets import Target
from autoscaler.service.sync.view import CachedView
from tests.kube.test_pod_index import LABELS, SELECTORS, record


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("select"), st.sampled_from("abcd"), st.sampled_from(SELECTORS)),
            st.tuples(st.just("pod"), st.sampled_from("pqrstu"), st.sampled_from(LABELS)),
            st.tuples(st.just("forget"), st.sampled_from("abcd"), st.none()),
        ),
        max_size=40,
    )
)
def test_others_selecting_is_what_matching_every_selector_says(steps: list[tuple[str, str, str | None]]) -> None:
    """The pod → selecting targets map is kept up to date step by step (a target's first selector is
    added to it, anything else rebuilds it): its answer is always the brute-force one."""
    index = PodIndex()
    view = CachedView(None, index, None, None)  # type: ignore[arg-type]  # only the selection is used
    selectors: dict[str, LabelSelector] = {}
    pods: dict[str, PodRecord] = {}
    parsed = {text: parse_label_selector(text) for text in SELECTORS}
    for kind, name, value in steps:
        if kind == "pod":
            app, _, tier = (value or "").partition(",")
            after = record(name, app=app, tier=tier)
            index.on_change(("default", name), pods.get(name), after)
            pods[name] = after
        elif kind == "forget":
            view.forget(("default", name))
            selectors.pop(name, None)
        else:
            assert value is not None
            selectors[name] = parsed[value]
            view.select(target(name), parsed[value])
        for asking, selector in selectors.items():
            chosen = index.select("default", selector)
            expected = sorted(
                f"default/{other}"
                for other, theirs in selectors.items()
                if other != asking and any(p in index.select("default", theirs) for p in chosen)
            )
            assert view.others_selecting(target(asking), chosen) == expected


def target(name: str) -> Target:
    return Target("default", name, f"uid-{name}", 1, None)
