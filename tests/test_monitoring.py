"""The monitoring assets (``manifests/monitoring/``): a kustomize Component that adds to the install, rules
promtool accepts, a dashboard Grafana can load, and expressions that read only the service's own metrics
(checked against a running service with a real Prometheus in ``tests/e2e/test_monitoring_e2e.py``)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from autoscaler_sandbox import find_binary
from tests.guard import REQUIRE_SERVERS
from tests.manifests import MANIFESTS, MONITORING, default_install, find, ident, monitored_install, one
from tests.monitoring import alerts, dashboard, dashboard_expressions, metric_names, rule_groups


def _binary(name: str, package: str) -> str:
    found = find_binary(name)
    if found is None:
        message = f"{name} is not installed (Debian package '{package}')"
        if REQUIRE_SERVERS:
            pytest.fail(f"{message}, and AUTOSCALER_REQUIRE_SERVERS=1 forbids skipping")
        pytest.skip(message)
    return found


def test_the_component_adds_a_servicemonitor_rules_and_a_dashboard() -> None:
    base, monitored = default_install(), monitored_install()
    added = [doc for doc in monitored if ident(doc) not in {ident(d) for d in base}]
    assert sorted((doc["kind"], doc["metadata"]["name"]) for doc in added) == [
        ("ConfigMap", "autoscaler-dashboard"),
        ("PrometheusRule", "autoscaler"),
        ("ServiceMonitor", "autoscaler"),
    ]
    assert all(doc["metadata"]["namespace"] == "autoscaler" for doc in added)
    service = one(base, "Service", "autoscaler-metrics")
    monitor = one(monitored, "ServiceMonitor")
    labels = service["metadata"]["labels"]
    assert all(labels.get(key) == value for key, value in monitor["spec"]["selector"]["matchLabels"].items())
    ports = {port["name"] for port in service["spec"]["ports"]}
    assert {endpoint["port"] for endpoint in monitor["spec"]["endpoints"]} <= ports
    assert one(monitored, "ConfigMap", "autoscaler-dashboard")["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert not find(base, "PrometheusRule")  # only with the component


def test_kustomize_renders_the_component_as_the_test_renderer_does() -> None:
    kubectl = _binary("kubectl", "kubernetes-client")
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "resources": [os.path.relpath(MANIFESTS, scratch)],
                    "components": [os.path.relpath(MONITORING, scratch)],
                }
            )
        )
        result = subprocess.run(
            [kubectl, "kustomize", scratch], capture_output=True, text=True, timeout=60, check=False
        )
    assert result.returncode == 0, result.stderr
    rendered = {ident(doc): doc for doc in yaml.safe_load_all(result.stdout) if doc}
    for doc in monitored_install():
        if doc["kind"] in ("ServiceMonitor", "PrometheusRule", "ConfigMap"):
            assert rendered[ident(doc)] == doc, doc["kind"]


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    promtool = _binary("promtool", "prometheus")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups()}))
    result = subprocess.run(
        [promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in result.stdout


def test_the_rules_alert_on_what_the_issue_asks() -> None:
    names = alerts()
    assert {
        "AutoscalerNoLeader",
        "AutoscalerCacheStale",
        "AutoscalerCacheRelisting",
        "AutoscalerPrometheusDegraded",
        "AutoscalerTargetMetricsFailing",
        "AutoscalerTargetAtMaxReplicas",
        "AutoscalerTargetLimited",
        "AutoscalerLeaseRenewalsLate",
    } <= set(names)
    for group in rule_groups():
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_the_dashboard_is_loadable() -> None:
    board = dashboard()
    assert board["uid"] == "autoscaler" and board["title"] == "Autoscaler"
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    assert {variable["name"] for variable in board["templating"]["list"]} == {"datasource", "namespace", "target"}
    assert len(dashboard_expressions()) >= 20


def test_the_metric_name_reader() -> None:
    assert metric_names('sum by (le) (rate(a_bucket{x="y", le=~"1"}[5m])) > 0.5 or absent(b)') == {"a_bucket", "b"}
    assert metric_names('time() - c{n=~".+"} > 4 * 15') == {"c"}
    assert metric_names("histogram_quantile(0.99, sum without (pod) (irate(d[1m])))") == {"d"}
    assert metric_names("max(e) < 1 or absent(e) unless on (instance) f offset 5m") == {"e", "f"}
    assert metric_names("process_resident_memory_bytes / 2^20") == {"process_resident_memory_bytes"}


def test_past_the_per_target_limit_the_aggregate_alerts_take_over(tmp_path: Path) -> None:
    """promtool's rule tests: with per-target series exported the aggregate alerts stay quiet (the
    per-target ones speak); without them (past metrics.perTargetSeriesLimit) they fire."""
    promtool = _binary("promtool", "prometheus")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups()}))
    series = [
        {"series": 'autoscaler_targets_condition{condition="ScalingActive", status="False"}', "values": "3x40"},
        {"series": "autoscaler_targets_most_overdue_sync_seconds", "values": "400x40"},
        {"series": 'autoscaler_targets_write_backoff{path="horizontal"}', "values": "2x40"},
        {"series": "autoscaler_targets_longest_pause_seconds", "values": "90000x40"},
    ]
    summaries = {
        "AutoscalerTargetsMetricsFailing": "3 ScalingTargets cannot compute a replica count.",
        "AutoscalerTargetsNotSynced": "A ScalingTarget has not been synced for 6m 40s past its sync period.",
        "AutoscalerTargetsWritesBackingOff": "2 ScalingTargets' writes (horizontal) keep failing.",
        "AutoscalerTargetsPausedTooLong": "A ScalingTarget has been paused for 1d 1h 0m 0s.",
    }
    names = tuple(summaries)
    descriptions = {
        rule["alert"]: rule["annotations"]["description"]
        for group in rule_groups()
        for rule in group["rules"]
        if rule["alert"] in summaries
    }

    def expected(name: str) -> dict[str, object]:
        labels = {"severity": "warning", **({"path": "horizontal"} if "Writes" in name else {})}
        return {
            "exp_labels": labels,
            "exp_annotations": {"summary": summaries[name], "description": descriptions[name]},
        }

    def case(exported: int, firing: bool) -> dict[str, object]:
        return {
            "interval": "1m",
            "input_series": [*series, {"series": "autoscaler_per_target_series_exported", "values": f"{exported}x40"}],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": name,
                    "exp_alerts": [expected(name)] if firing else [],
                }
                for name in names
            ],
        }

    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "tests": [case(0, True), case(1, False)]}))
    result = subprocess.run(
        [promtool, "test", "rules", str(tests)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_pause_forgotten_for_a_day_alerts(tmp_path: Path) -> None:
    """promtool's rule test: a target paused for more than a day fires AutoscalerTargetPausedTooLong (the
    service exports when each paused target became paused), one paused for an hour does not."""
    promtool = _binary("promtool", "prometheus")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups()}))
    [description] = [
        rule["annotations"]["description"]
        for group in rule_groups()
        for rule in group["rules"]
        if rule["alert"] == "AutoscalerTargetPausedTooLong"
    ]
    # promtool's time starts at 0: "since" -90000 is 25 hours before, -1800 half an hour, at eval_time 30m.
    series = [
        {"series": 'autoscaler_target_paused_since_seconds{namespace="shop", name="web"}', "values": "-90000x40"},
        {"series": 'autoscaler_target_paused_since_seconds{namespace="shop", name="api"}', "values": "-1800x40"},
    ]
    test = {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {
                "eval_time": "30m",
                "alertname": "AutoscalerTargetPausedTooLong",
                "exp_alerts": [
                    {
                        "exp_labels": {"severity": "warning", "namespace": "shop", "name": "web"},
                        "exp_annotations": {
                            "summary": "ScalingTarget shop/web has been paused for 1d 1h 30m 0s.",
                            "description": description,
                        },
                    }
                ],
            },
            {"eval_time": "5m", "alertname": "AutoscalerTargetPausedTooLong", "exp_alerts": []},  # not for 10m yet
        ],
    }
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "tests": [test]}))
    result = subprocess.run(
        [promtool, "test", "rules", str(tests)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_target_is_late_only_past_its_own_sync_period(tmp_path: Path) -> None:
    """promtool's rule test: AutoscalerTargetNotSynced counts 5 minutes past each target's own sync period
    (spec.syncPeriodSeconds, up to an hour): a target synced every hour is quiet between its syncs, one on the
    service's 15 s is late after 5 minutes, and one whose period is not exported counts from its last sync."""
    promtool = _binary("promtool", "prometheus")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups()}))
    series = [  # promtool's time starts at 0: each target last synced at 1000 s, evaluated at 30m (1800 s)
        *(
            {
                "series": f'autoscaler_target_last_sync_timestamp_seconds{{namespace="shop", name="{name}"}}',
                "values": "1000x40",
            }
            for name in ("web", "hourly", "legacy")
        ),
        {"series": 'autoscaler_target_sync_period_seconds{namespace="shop", name="web"}', "values": "15x40"},
        {"series": 'autoscaler_target_sync_period_seconds{namespace="shop", name="hourly"}', "values": "3600x40"},
    ]
    [description] = [
        rule["annotations"]["description"]
        for group in rule_groups()
        for rule in group["rules"]
        if rule["alert"] == "AutoscalerTargetNotSynced"
    ]
    late = [
        {
            "exp_labels": {"severity": "warning", "namespace": "shop", "name": name},
            "exp_annotations": {
                "summary": f"ScalingTarget shop/{name} has not been synced for over 5 minutes past its sync period.",
                "description": description,
            },
        }
        for name in ("legacy", "web")
    ]
    test = {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [{"eval_time": "30m", "alertname": "AutoscalerTargetNotSynced", "exp_alerts": late}],
    }
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "tests": [test]}))
    result = subprocess.run(
        [promtool, "test", "rules", str(tests)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
