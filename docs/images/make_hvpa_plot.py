"""Draw docs/images/hvpa-kube-apiserver.png: replicas and per-pod CPU against the total CPU recommendation.

A dev tool, not part of the package: it needs matplotlib (``pip install matplotlib``), which the autoscaler
itself never imports. It runs the real engine (``decide_hvpa``) over a slow rise of the total CPU from
50m to 44 cores and the same fall back, on HVPA-EP-0001's five kube-apiserver intervals with a 30 %
scalingIntervalsOverlap, the VPA as the only source, and minChange 0, the pods always carrying what
the previous decision applied. Run from anywhere:

    python docs/images/make_hvpa_plot.py
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402

from autoscaler.core.hvpa.decision import HvpaObservation, HvpaState, VpaObservation, decide_hvpa  # noqa: E402
from autoscaler.core.hvpa.intervals import effective_intervals  # noqa: E402
from autoscaler.core.hvpa.vpa import ContainerRecommendation, VpaCondition, VpaStatus  # noqa: E402
from autoscaler.core.observation import ContainerInfo, PodInfo  # noqa: E402
from autoscaler.core.spec_parse import parse_target_spec  # noqa: E402

SPEC = parse_target_spec(
    yaml.safe_load("""
scaleTargetRef: {kind: Deployment, name: kube-apiserver}
minReplicas: 1
maxReplicas: 5
hvpa:
  sources: [vpa]
  scalingIntervals:
  - {maxReplicas: 1, maxResources: {cpu: 500m}}
  - {maxReplicas: 2, maxResources: {cpu: 1}}
  - {maxReplicas: 3, maxResources: {cpu: 2}}
  - {maxReplicas: 4, maxResources: {cpu: 4}}
  - {maxReplicas: 5, maxResources: {cpu: 8}}
  scalingIntervalsOverlap: {cpu: {percentage: 30}}
  scaleUp: {minChange: {cpu: {value: 0}}}
  scaleDown: {minChange: {cpu: {value: 0}}}
  containers: [{name: kube-apiserver, controlledResources: [cpu]}]
""")
)
CONTAINER = "kube-apiserver"
STEP = Fraction(1, 20)  # 50m of total CPU per sync
TOP = Fraction(44)


def sweep(totals: list[Fraction], replicas: int, request: Fraction) -> tuple[list[int], list[float], int, Fraction]:
    """Feed ``totals`` one sync at a time; the pods take every applied decision."""
    counts, per_pod = [], []
    for total in totals:
        pods = [
            PodInfo(f"p{i}", containers=(ContainerInfo(CONTAINER, {"cpu": int(request * 1000)}),))
            for i in range(replicas)
        ]
        status = VpaStatus(
            (ContainerRecommendation(CONTAINER, {"cpu": total / replicas}),),
            (VpaCondition("RecommendationProvided", "True"),),
        )
        decision = decide_hvpa(SPEC, HvpaObservation(replicas, pods, VpaObservation(status)), None, HvpaState(), 0.0)
        if decision.applied:
            replicas, request = decision.replicas, decision.requests[CONTAINER]["cpu"]
        counts.append(replicas)
        per_pod.append(float(request))
    return counts, per_pod, replicas, request


def main() -> None:
    up = [STEP * k for k in range(1, int(TOP / STEP) + 1)]
    down = list(reversed(up))
    up_counts, up_pods, replicas, request = sweep(up, 1, STEP)
    down_counts, down_pods, _, _ = sweep(down, replicas, request)
    assert SPEC.hvpa is not None
    intervals = effective_intervals(SPEC.hvpa, "cpu", SPEC.hvpa.containers[0], 1, 5)
    assert isinstance(intervals, tuple)

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True, gridspec_kw={"height_ratios": [2, 3]})
    x_up, x_down = [float(t) for t in up], [float(t) for t in down]
    top.step(x_up, up_counts, where="post", color="tab:red", linewidth=2, label="rising total")
    top.step(x_down, down_counts, where="post", color="tab:blue", linewidth=2, linestyle="--", label="falling total")
    top.set_ylabel("replicas")
    top.set_yticks(range(1, 6))
    top.set_ylim(0.5, 5.5)
    bottom.plot(x_up, up_pods, color="tab:red", linewidth=2, label="rising total")
    bottom.plot(x_down, down_pods, color="tab:blue", linewidth=2, linestyle="--", label="falling total")
    bottom.set_ylabel("CPU request per pod (cores)")
    bottom.set_xlabel("total CPU recommendation (cores) = per-pod recommendation × current replicas")
    for axis in (top, bottom):
        axis.set_xscale("log")
        axis.set_xlim(0.05, float(TOP))
        axis.grid(True, which="both", alpha=0.25)
        for interval in intervals:
            axis.axvline(float(interval.max_total), color="tab:red", alpha=0.35, linewidth=1)
            if interval.replicas > 1:
                axis.axvline(float(interval.min_total), color="tab:blue", alpha=0.35, linewidth=1, linestyle=":")
    for interval in intervals:
        top.annotate(
            f"MAX({interval.replicas})",
            (float(interval.max_total), 5.35),
            color="tab:red",
            fontsize=8,
            ha="right",
            rotation=90,
            va="top",
        )
        if interval.replicas > 1:
            top.annotate(
                f"MIN({interval.replicas})",
                (float(interval.min_total), 0.6),
                color="tab:blue",
                fontsize=8,
                ha="right",
                rotation=90,
                va="bottom",
            )
    bottom.annotate(
        "scale-out: pods kept\nat their size (A15)",
        xy=(16.2, 4.0),
        xytext=(2.0, 6.9),
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": "gray"},
    )
    bottom.annotate(
        "scale-in postponed: pods held\n(ParadoxicalScaling, A14)",
        xy=(10, 2.24),
        xytext=(2.0, 4.6),
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": "gray"},
    )
    top.legend(loc="upper left")
    bottom.legend(loc="upper left")
    bottom.set_xticks([0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 40])
    bottom.get_xaxis().set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    figure.suptitle("HVPA-EP-0001 kube-apiserver intervals, 30 % scalingIntervalsOverlap (VPA source, minChange 0)")
    figure.tight_layout()
    out = Path(__file__).with_name("hvpa-kube-apiserver.png")
    figure.savefig(out, dpi=110)
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
