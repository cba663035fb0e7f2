"""Service settings: file, environment and flags, with every problem reported at start-up."""

from pathlib import Path

import pytest

from autoscaler.service.settings import load_service_settings, parse_service_settings
from autoscaler.values.fields import SpecError

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_file_is_valid() -> None:
    settings = load_service_settings(str(ROOT / "config" / "autoscaler.yaml"), environ={})
    assert settings.sync.period_seconds == 15
    assert settings.serving.leader_election.enabled


def test_environment_overrides_the_file_and_flags_override_both(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("prometheus: {url: http://file:9090}\nsync: {periodSeconds: 30}\n")
    settings = load_service_settings(
        str(path),
        environ={
            "AUTOSCALER_PROMETHEUS_URL": "http://env:9090",
            "AUTOSCALER_SYNC_PERIOD_SECONDS": "20",
            "AUTOSCALER_NAMESPACES": "a, b",
            "AUTOSCALER_DRY_RUN": "true",
        },
        flags={("sync", "periodSeconds"): 10},
    )
    assert settings.prometheus.url == "http://env:9090"
    assert settings.sync.period_seconds == 10
    assert settings.kubernetes.namespaces == ("a", "b")
    assert settings.serving.dry_run is True


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(SpecError) as info:
        parse_service_settings(
            {
                "prometheus": {"url": "ftp://x", "timeoutSecond": 3},
                "sync": {"periodSeconds": 0, "concurency": 3},
                "leaderElection": {"leaseDurationSeconds": 5, "renewDeadlineSeconds": 10},
                "logging": {"format": "xml"},
                "dryrun": True,
            }
        )
    messages = [str(e) for e in info.value.errors]
    assert "sync.periodSeconds: must be between 1 and 3600" in messages
    assert 'sync.concurency: unknown field (did you mean "concurrency"?)' in messages
    assert "leaderElection.renewDeadlineSeconds: must be less than leaseDurationSeconds" in messages
    assert 'dryrun: unknown field (did you mean "dryRun"?)' in messages
    assert any(m.startswith("prometheus.url:") for m in messages)
    assert any(m.startswith("prometheus.timeoutSecond: unknown field") for m in messages)
    assert any(m.startswith('logging.format: Unsupported value: "xml"') for m in messages)


def test_prometheus_url_is_required() -> None:
    with pytest.raises(SpecError) as info:
        parse_service_settings({})
    assert str(info.value.errors[0]).startswith("prometheus.url: Required value")


def test_a_zero_tolerance_means_the_default_as_in_kube_controller_manager() -> None:
    settings = parse_service_settings({"prometheus": {"url": "http://p:9090"}, "controller": {"tolerance": 0}})
    assert settings.controller.tolerances.scale_up == 0.1
