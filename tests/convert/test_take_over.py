"""A converted target carries the cut-over annotation (issue 43): applied beside the HPA or ScaledObject it
comes from it is a shadow, and it takes over as soon as that object is deleted (docs/migrating.md)."""

from __future__ import annotations

from pathlib import Path

from autoscaler.convert.hpa import convert_hpa
from autoscaler.convert.keda import convert_scaled_object
from autoscaler.core.other_autoscalers import TAKE_OVER_ANNOTATION
from autoscaler.service.cluster.targets import target_from_object
from tests.convert.helpers import SCALED_OBJECTS, documents
from tests.convert.test_convert_objects import adapter, converted, hpa, scaled_object


def test_converted_targets_agree_to_the_cut_over(tmp_path: Path) -> None:
    for conversion in (
        convert_hpa(hpa("web"), "hpas.yaml", adapter()),
        convert_scaled_object(scaled_object(_first_scaled_object()), "scaledobjects.yaml"),
    ):
        converted(conversion, tmp_path)
        assert conversion.target is not None
        assert conversion.target["metadata"]["annotations"] == {TAKE_OVER_ANNOTATION: "true"}
        assert target_from_object(conversion.target).metadata.take_over  # as the service reads it


def _first_scaled_object() -> str:
    return str(next(iter(documents(SCALED_OBJECTS.read_text())))["metadata"]["name"])
