"""The VPA status: when its recommendation may be used (A12), which field, and reading it."""

import pytest

from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaCondition, VpaStatus, distrust_reason, read_vpa_status
from autoscaler.values.fields import ErrorList
from tests.core.hvpa.builders import q


def status(*conditions: tuple[str, str]) -> VpaStatus:
    rec = (ContainerRecommendation("main", {"cpu": q("1")}),)
    return VpaStatus(rec, tuple(VpaCondition(t, s) for t, s in conditions))


def test_recommendation_provided_is_required() -> None:
    assert distrust_reason(status(("RecommendationProvided", "True"))) is None
    assert "RecommendationProvided" in str(distrust_reason(status()))  # an empty list is not trust
    assert "RecommendationProvided" in str(distrust_reason(status(("RecommendationProvided", "Unknown"))))
    assert (
        distrust_reason(
            status(("RecommendationProvided", "True"), ("FetchingHistory", "True"), ("NoPodsMatched", "False"))
        )
        is None
    )


@pytest.mark.parametrize("condition", ["ConfigUnsupported", "ConfigDeprecated", "LowConfidence"])
def test_distrusting_conditions_win_in_any_order(condition: str) -> None:
    before = status((condition, "True"), ("RecommendationProvided", "True"))
    after = status(("RecommendationProvided", "True"), (condition, "True"))  # hvpa-controller stopped scanning here
    assert f"{condition} condition is True" in str(distrust_reason(before))
    assert f"{condition} condition is True" in str(distrust_reason(after))
    assert distrust_reason(status(("RecommendationProvided", "True"), (condition, "False"))) is None


def test_no_recommendation_block() -> None:
    no_block = VpaStatus(None, (VpaCondition("RecommendationProvided", "True"),))
    assert "no recommendation" in str(distrust_reason(no_block))


def test_uncapped_target_falls_back_to_target_per_resource() -> None:
    rec = ContainerRecommendation("main", {"cpu": q("1"), "memory": q("1Gi")}, uncapped_target={"cpu": q("3")})
    assert rec.per_pod() == {"cpu": q("3"), "memory": q("1Gi")}
    assert ContainerRecommendation("main", {"cpu": q("1")}).per_pod() == {"cpu": q("1")}


STATUS = {
    "recommendation": {
        "containerRecommendations": [
            {
                "containerName": "main",
                "target": {"cpu": "1", "memory": "2Gi"},
                "uncappedTarget": {"cpu": "1500m"},
                "lowerBound": {"cpu": "500m"},
                "upperBound": {"cpu": "2"},
            }
        ]
    },
    "conditions": [
        {
            "type": "RecommendationProvided",
            "status": "True",
            "lastTransitionTime": "2024-05-01T10:00:00Z",
            "reason": "",
            "message": "",
        }
    ],
}


def test_reading_a_status() -> None:
    errors = ErrorList()
    parsed = read_vpa_status(STATUS, "vpa", errors)
    assert not errors and parsed is not None
    main = parsed.for_container("main")
    assert main is not None and main.per_pod() == {"cpu": q("1.5"), "memory": q("2Gi")}
    assert parsed.for_container("other") is None


def test_strict_reading_reports_paths() -> None:
    bad = {
        "recommendation": {
            "containerRecommendations": [
                {"containerName": "main", "target": {"cpu": "1x", "memroy": "1Gi"}},
                {"containerName": "main", "target": {}},
                {"uncappedTarget": {"cpu": "1"}},
            ]
        },
        "conditions": [{"type": "RecommendationProvide", "status": "true", "lastTransitionTime": "yesterday"}],
    }
    errors = ErrorList()
    assert read_vpa_status(bad, "steps[2].vpa", errors) is None
    messages = [str(e) for e in errors.items]
    assert messages[0].startswith(
        "steps[2].vpa.recommendation.containerRecommendations[0].target.cpu: invalid quantity '1x'"
    )
    assert messages[1] == (
        'steps[2].vpa.recommendation.containerRecommendations[0].target.memroy: unknown field (did you mean "memory"?)'
    )
    assert 'containerRecommendations[1].containerName: Duplicate value: "main"' in messages[2]
    assert "containerRecommendations[2].containerName: Required value" in messages[3]
    assert "containerRecommendations[2].target: Required value" in messages[4]
    assert 'steps[2].vpa.conditions[0].type: Unsupported value: "RecommendationProvide"' in messages[5]
    assert 'steps[2].vpa.conditions[0].status: Unsupported value: "true"' in messages[6]
    assert "steps[2].vpa.conditions[0].lastTransitionTime: must be an RFC 3339 time" in messages[7]


def test_lenient_reading_skips_what_newer_vpas_add() -> None:
    newer = {
        **STATUS,
        "observedGeneration": 3,
        "recommendation": {
            "containerRecommendations": [
                {"containerName": "main", "target": {"cpu": "1", "ephemeral-storage": "1Gi"}, "futureField": 1}
            ]
        },
        "conditions": [{"type": "SomethingNew", "status": "True"}],
    }
    errors = ErrorList()
    parsed = read_vpa_status(newer, "status", errors, strict=False)
    assert not errors and parsed is not None
    assert parsed.conditions[0].type == "SomethingNew"
    errors = ErrorList()
    assert read_vpa_status(newer, "status", errors) is None and errors
