"""Histories for ``convert --compare``: the backtest tests' shop/web workload (its pods followed
WEB_SPEC's decisions sync by sync), plus what kube-state-metrics recorded of two HPAs on it:

* ``web``: the HPA whose decisions the history followed; converted from its HPA object and the
  adapter configuration below, it must replay to exactly its recorded decisions;
* ``web-old``: an HPA on the same Deployment whose recorded decisions came from a different rps
  target (as if the adapter had served rps at half the rate): the comparison must flag it.
"""

from __future__ import annotations

import copy
from typing import Any

from autoscaler.simulate.runner import run_scenario
from autoscaler.simulate.scenario import parse_scenario
from autoscaler_sandbox.history import OpenMetricsHistory
from tests.backtest import history_data as hd

ADAPTER_CONFIG: dict[str, Any] = {
    "rules": [
        {
            "seriesQuery": 'http_rps{namespace!="",pod!=""}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "name": {"matches": "^http_(.*)$"},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
        }
    ],
    "resourceRules": {
        "cpu": {
            "containerQuery": "sum(app_cpu_usage_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "containerLabel": "container",
        },
    },
}


def hpa(name: str) -> dict[str, Any]:
    """WEB_SPEC as the HPA it was: the same spec without queries."""
    spec = copy.deepcopy(hd.WEB_SPEC)
    for metric in spec["metrics"]:
        metric[metric["type"][0].lower() + metric["type"][1:]].pop("query")
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": hd.NAMESPACE},
        "spec": spec,
    }


def decisions(scenario: dict[str, Any]) -> list[int]:
    return [step.decision.replicas for step in run_scenario(parse_scenario(scenario))]


def add_histories(history: OpenMetricsHistory) -> None:
    syncs, scenario = hd.web_history()
    hd.add_web(history, syncs)
    hd.add_noise(history)
    followed = decisions(scenario)
    drifted_spec = copy.deepcopy(hd.WEB_SPEC)
    drifted_spec["metrics"][1]["pods"]["target"]["averageValue"] = "20"
    drifted = decisions({**scenario, "spec": drifted_spec})
    assert followed != drifted
    for k, sync in enumerate(syncs):
        for name, desired in (("web", followed[k]), ("web-old", drifted[k])):
            labels = {"namespace": hd.NAMESPACE, "horizontalpodautoscaler": name}
            history.add("kube_horizontalpodautoscaler_status_desired_replicas", labels, sync.at, str(desired))
            history.add("kube_horizontalpodautoscaler_status_current_replicas", labels, sync.at, str(len(sync.live())))
