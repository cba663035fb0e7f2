"""Step 7: the direction of an action (A16) and its gates, in order (A17, A19, A27)."""

from fractions import Fraction

from autoscaler.core.hvpa.gates import BlockReason, Direction, PairChange, check_gates, direction, min_change_threshold
from autoscaler.core.hvpa.spec import ChangeParams, MaintenanceWindow, ScaleType, UpdateMode
from autoscaler.core.hvpa.windows import parse_time_of_day
from tests.core.hvpa.builders import q

MIDNIGHT = 1_714_521_600  # 2024-05-01T00:00:00Z
NIGHT = MaintenanceWindow(
    parse_time_of_day("220000+0000"), parse_time_of_day("040000+0000"), "220000+0000", "040000+0000"
)


def change(now: str, new: str, recommendation: str, resource: str = "cpu") -> PairChange:
    return PairChange(f"main/{resource}", resource, q(now), q(new), q(recommendation))


def test_direction() -> None:
    assert direction(2, 3, [change("2", "2", "3")]) is Direction.UP
    assert direction(3, 3, [change("3", "3.3", "3.3"), change("3Gi", "2Gi", "2Gi", "memory")]) is Direction.UP
    assert direction(3, 2, [change("3", "4", "4")]) is Direction.UP  # any rising total makes it "up"
    assert direction(3, 2, [change("3", "2", "2")]) is Direction.DOWN
    assert direction(3, 3, [change("3", "2.9", "2.9")]) is Direction.DOWN
    assert direction(3, 3, [change("3", "3", "3.0001")]) is None


GO = [change("2", "3", "3")]


def gate(
    scale_type: ScaleType,
    changes: list[PairChange] = GO,
    *,
    now: float = 1000,
    last: float | None = None,
    clock: float | None = None,
    window: MaintenanceWindow | None = None,
) -> BlockReason | None:
    return check_gates(
        scale_type, "hvpa.scaleUp", changes, now=now, last_applied=last, clock=clock, window=window
    ).reason


def test_update_mode_off_blocks_first() -> None:
    everything = ScaleType(UpdateMode.OFF, {}, Fraction(600), "10m")
    assert gate(everything, [change("2", "2", "2")], last=999) is BlockReason.UPDATE_POLICY


def test_stabilization_window() -> None:
    three_minutes = ScaleType(stabilization_seconds=Fraction(180), stabilization_text="3m")
    assert gate(three_minutes, last=1000 - 179) is BlockReason.STABILIZATION_WINDOW
    assert gate(three_minutes, last=1000 - 180) is None  # blocked only while elapsed < duration (A27)
    assert gate(three_minutes, last=None) is None
    assert gate(ScaleType(), last=1000) is None


def test_stabilization_is_checked_before_the_maintenance_window() -> None:
    both = ScaleType(UpdateMode.MAINTENANCE_WINDOW, {}, Fraction(180), "3m")
    assert gate(both, last=950, clock=MIDNIGHT + 12 * 3600, window=NIGHT) is BlockReason.STABILIZATION_WINDOW


def test_maintenance_window_across_midnight() -> None:
    mode = ScaleType(UpdateMode.MAINTENANCE_WINDOW)
    assert gate(mode, clock=MIDNIGHT + 23 * 3600, window=NIGHT) is None
    assert gate(mode, clock=MIDNIGHT + 3 * 3600, window=NIGHT) is None
    assert gate(mode, clock=MIDNIGHT + 4 * 3600 + 1, window=NIGHT) is BlockReason.MAINTENANCE_WINDOW
    assert gate(mode, clock=None, window=NIGHT) is BlockReason.MAINTENANCE_WINDOW  # time unknown: not confirmed
    assert gate(ScaleType(), clock=MIDNIGHT + 12 * 3600, window=NIGHT) is None  # Auto ignores the window


def test_min_change_is_checked_last() -> None:
    small = [change("3", "3.1", "3.1")]
    window_and_small = ScaleType(UpdateMode.MAINTENANCE_WINDOW)
    assert gate(window_and_small, small, clock=MIDNIGHT + 12 * 3600, window=NIGHT) is BlockReason.MAINTENANCE_WINDOW
    assert gate(window_and_small, small, clock=MIDNIGHT, window=NIGHT) is BlockReason.MIN_CHANGE


def test_min_change_threshold_is_the_smaller_part_with_defaults() -> None:
    both = ScaleType(min_change={"cpu": ChangeParams(q("500m"), 10)})
    assert min_change_threshold(both, "cpu", q("3")) == q("300m")  # min(500m, 10 % of 3)
    assert min_change_threshold(both, "cpu", q("10")) == q("500m")
    assert min_change_threshold(both, "memory", q("1Gi")) == 200_000_000  # default 200M
    assert min_change_threshold(ScaleType(), "cpu", q("1")) == q("200m")  # default 200m
    assert min_change_threshold(ScaleType(min_change={"cpu": ChangeParams(None, 5)}), "cpu", q("4")) == q("200m")


def test_min_change_blocks_only_when_every_pair_is_small() -> None:
    assert gate(ScaleType(), [change("3", "3", "3.199")]) is BlockReason.MIN_CHANGE
    assert gate(ScaleType(), [change("3", "3", "3.2")]) is None  # equality passes
    assert gate(ScaleType(), [change("3", "3", "2.8")]) is None  # either direction
    assert gate(ScaleType(), [change("3", "3", "3.1"), change("1Gi", "1Gi", "2Gi", "memory")]) is None
    both_small = [change("3", "3", "3.1"), change("1Gi", "1Gi", "1.1Gi", "memory")]
    assert gate(ScaleType(), both_small) is BlockReason.MIN_CHANGE
