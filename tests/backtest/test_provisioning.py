"""The report's provisioning figures on a known history (tests/backtest/prediction_data.py): the ideal count
steps 2 → 6 at T0 + 300 s; the replay decides 6 there, its status shows 6 a sync later, and the four added pods
serve ``--pod-startup`` after that, so the under-provisioned integral is 4 pods × (15 s + the start-up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.backtest.compare import comparison_json, render_comparison
from autoscaler.backtest.report import render_text, report_json
from autoscaler_sandbox import PrometheusSandbox
from tests.backtest import history_data as hd
from tests.backtest import prediction_data as pd
from tests.backtest.helpers import replay, web_options, write_target

pytestmark = pytest.mark.prometheus

WINDOW_SYNCS = hd.SYNCS  # 40 syncs of 15 s from T0; the step up is the 21st
STEP_SYNC = 20


@pytest.mark.parametrize(("startup", "under"), [(45.0, 4 * (15 + 45)), (0.0, 4 * 15), (20.0, 4 * (15 + 30))])
async def test_a_step_load_with_a_known_start_up(
    history_prometheus: PrometheusSandbox, tmp_path: Path, startup: float, under: float
) -> None:
    """20 s of start-up: the added pods serve at the second sync after they were created (15 s is too soon)."""
    steady = write_target(tmp_path, "steady.yaml", pd.STEADY_SPEC, namespace=pd.NAMESPACE, name="steady")
    result, steps, _ = await replay(history_prometheus, [steady], web_options(pod_startup=startup))
    report = result.runs[0].report
    assert [s.outcome.decision.replicas for s in steps[str(steady)]] == [2] * STEP_SYNC + [6] * (
        WINDOW_SYNCS - STEP_SYNC
    )
    supply = report.provisioning
    assert supply.under_pod_seconds == under
    assert supply.under_syncs == under / 4 / 15
    assert supply.largest_shortfall == 4
    assert supply.known_syncs == WINDOW_SYNCS
    # Replica-hours: 2 replicas for 20 syncs, then 6 for 20, each held 15 s.
    assert report.replica_hours == pytest.approx((2 * 20 + 6 * 20) * 15 / 3600)
    assert supply.ready_pod_seconds == (2 * WINDOW_SYNCS + 4 * (WINDOW_SYNCS - STEP_SYNC) - under / 15) * 15
    assert report.forecast is None

    document = report_json(report)
    assert document["provisioning"] == {
        "underProvisionedPodSeconds": under,
        "underProvisionedSyncs": supply.under_syncs,
        "largestShortfall": 4,
        "idealKnownSyncs": WINDOW_SYNCS,
        "replicaHours": round((2 * 20 + 6 * 20) * 15 / 3600, 6),
        "readyPodSeconds": supply.ready_pod_seconds,
    }
    assert document["forecast"] is None
    text = render_text(report)
    assert f"under-provisioned  {under:,.0f} pod-seconds at {supply.under_syncs} of {WINDOW_SYNCS} syncs" in text
    assert "replica-hours      0.7" in text


async def test_compare_shows_both_figures(history_prometheus: PrometheusSandbox, tmp_path: Path) -> None:
    """A spec capped at 4 replicas stays under-provisioned by 2 from the step on: its column says so, and the
    difference's under-provisioning change is against the first spec."""
    steady = write_target(tmp_path, "steady.yaml", pd.STEADY_SPEC, namespace=pd.NAMESPACE, name="steady")
    capped = write_target(
        tmp_path, "capped.yaml", {**pd.STEADY_SPEC, "maxReplicas": 4}, namespace=pd.NAMESPACE, name="steady"
    )
    result, _, _ = await replay(history_prometheus, [steady, capped], web_options(pod_startup=45.0))
    first, second = (run.report for run in result.runs)
    assert first.provisioning.under_pod_seconds == 240
    # Capped at 4: the ideal is clamped to maxReplicas as well, so 2 pods short for the 45 s of start-up + 15 s.
    assert second.provisioning.under_pod_seconds == 2 * 60
    document = comparison_json([first, second], result.divergence)
    assert document["difference"]["underProvisionedPodSeconds"] == 120 - 240
    assert document["difference"]["underProvisionedChange"] == -0.5
    assert document["difference"]["replicaHoursChange"] == round(
        ((2 * 20 + 4 * 20) - (2 * 20 + 6 * 20)) / (2 * 20 + 6 * 20), 6
    )
    text = render_comparison([first, second], result.divergence)
    row = next(line for line in text.splitlines() if line.startswith("under-provisioned pod-seconds"))
    assert row.split()[-2:] == ["240", "120"]
    assert f"{capped} against {steady}: under-provisioned pod-seconds -50.0 %, replica-hours -25.0 %." in text
    assert "forecast error" not in text  # neither spec predicts


async def test_the_predictive_spec_is_ready_before_the_step(
    history_prometheus: PrometheusSandbox, tmp_path: Path
) -> None:
    """The same spec with spec.prediction (seasonal naive over the 600 s season, 45 s start-up: a horizon of 60 s,
    a refresh every 60 s): its forecasts (known: tests/backtest/test_forecasting.py) raise it to 3 at sync 11 and 6
    at sync 15, so its pods serve by sync 19, before the step at sync 20: no under-provisioning, for 9 syncs where
    the forecast decided, and none of its scale-downs caused by the forecast."""
    steady = write_target(tmp_path, "steady.yaml", pd.STEADY_SPEC, namespace=pd.NAMESPACE, name="steady")
    predictive = write_target(
        tmp_path,
        "predictive.yaml",
        {**pd.STEADY_SPEC, "prediction": pd.PREDICTION},
        namespace=pd.NAMESPACE,
        name="steady",
    )
    result, steps, _ = await replay(history_prometheus, [steady, predictive], web_options(pod_startup=45.0))
    reactive_report, predictive_report = (run.report for run in result.runs)
    decided = [s.outcome.decision for s in steps[str(predictive)]]
    assert [d.replicas for d in decided] == [2] * 11 + [3] * 4 + [6] * 25
    assert [d.forecast is not None and d.forecast.raised for d in decided] == [False] * 11 + [True] * 9 + [False] * 20
    assert reactive_report.provisioning.under_pod_seconds == 240
    assert predictive_report.provisioning.under_pod_seconds == 0
    assert predictive_report.replica_hours == pytest.approx((2 * 11 + 3 * 4 + 6 * 25) * 15 / 3600)
    tally = predictive_report.forecast
    assert tally is not None and reactive_report.forecast is None
    assert (tally.syncs, tally.usable_syncs, tally.decided_syncs, tally.caused_scale_downs) == (40, 40, 9, 0)
    assert tally.mape == 0.0 and tally.model == "seasonalNaive"

    document = comparison_json([reactive_report, predictive_report], result.divergence)
    forecast = document["runs"][1]["forecast"]
    assert forecast["mapePercent"] == 0.0 and forecast["decidedSyncs"] == 9
    assert forecast["scaleDownsCausedByForecast"] == 0 and forecast["ignored"] == []
    assert forecast["lines"]["queue_rate"][0]["actual"] == pd.LOW
    assert document["difference"]["underProvisionedChange"] == -1.0
    text = render_comparison([reactive_report, predictive_report], result.divergence)
    row = next(line for line in text.splitlines() if line.startswith("forecast error (MAPE)"))
    assert row.split()[-4:] == ["-", "0.0", "%", "(seasonalNaive)"]
    assert "predictive.yaml against" in text and "under-provisioned pod-seconds -100.0 %" in text
    single = render_text(predictive_report)
    assert "forecast (seasonalNaive)  MAPE 0.0 %" in single and "scale-downs it caused: 0" in single
