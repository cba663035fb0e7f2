"""PNG plots with matplotlib (object API and the Agg canvas: no pyplot, no display, no global state).

The image's text chunks name every series (``autoscaler:series``, JSON), so a test or a script can
check what a plot holds without looking at pixels.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

from autoscaler.plot.series import OTHER_REASON_COLOR, REASON_COLORS, PlotData, Series, finite, held, runs_of

RUN_COLORS = ("#1f77b4", "#9467bd", "#2ca02c", "#8c564b")
STRIP = 0.07  # height of one run's "limited" strip, as a fraction of the replicas panel, when comparing


def _x(data: PlotData, values: Sequence[float]) -> list[Any]:
    if data.absolute_times:
        return [datetime.fromtimestamp(v, UTC) for v in values]
    return list(values)


def write_png(data: PlotData, path: str) -> None:
    rows = len(data.panels)
    figure = Figure(figsize=(13, 1.0 + 2.7 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    by_panel = {title: ax for (title, _), ax in zip(data.panels, axes, strict=True)}
    many = len(data.run_labels) > 1
    for (title, unit), ax in zip(data.panels, axes, strict=True):
        ax.set_title(title, loc="left", fontsize="medium", fontweight="bold")
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        if title == "replicas":
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))

    blocked = sorted({s.reason or "" for s in data.series if s.kind == "blocked"})
    for series in data.series:
        _draw(data, by_panel[series.panel], series, many, blocked)
    for (_, unit), ax in zip(data.panels, axes, strict=True):
        if unit == "bytes":
            _binary_ticks(ax)
    if many and "replicas" in by_panel:
        # Name each run's strip of limiting reasons at its left end.
        limited_runs = {s.run for s in data.series if s.kind == "limit"}
        for run in sorted(limited_runs):
            by_panel["replicas"].text(
                0.004,
                (run + 0.5) * STRIP,
                data.run_labels[run],
                fontsize="x-small",
                va="center",
                transform=by_panel["replicas"].transAxes,
            )
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small", frameon=False)
    if data.absolute_times:
        locator = AutoDateLocator()
        axes[-1].xaxis.set_major_locator(locator)
        axes[-1].xaxis.set_major_formatter(ConciseDateFormatter(locator))
        axes[-1].set_xlabel("time (UTC)")
    else:
        axes[-1].set_xlabel("seconds")
    figure.suptitle(data.title, fontsize="large")
    metadata = {
        "Title": data.title,
        "Software": "autoscaler plot (matplotlib)",
        "autoscaler:series": json.dumps(data.described()),
    }
    figure.savefig(path, format="png", dpi=100, metadata=metadata)


BLOCKED_COLORS = ("#d62728", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f")
_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10), ("", 1))


def _binary_ticks(ax: Any) -> None:
    """Memory on a binary scale, as Kubernetes writes it: ticks at 0, 4Gi, 8Gi… rather than 4.65661Gi."""
    top = max(abs(v) for v in ax.get_ylim())
    name, size = next(((n, s) for n, s in _BINARY if top >= s), _BINARY[-1])
    step = 2.0 ** math.ceil(math.log2(max(top / size / 8, 2.0**-10)))
    ax.yaxis.set_major_locator(MultipleLocator(step * size))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value / size:g}{name}" if value else "0"))


def _draw(data: PlotData, ax: Any, series: Series, many: bool, blocked: list[str]) -> None:
    color = RUN_COLORS[series.run % len(RUN_COLORS)]
    if series.kind in ("limit", "failed", "blocked"):
        _band(data, ax, series, many, blocked)
        return
    if series.kind in ("target", "bound"):
        x, y = _x(data, [series.x[0], data.end or series.x[-1]]) if series.x else [], finite(series.y)
        style = ("black", "--") if series.kind == "target" else ("#b0b0b0", ":")
        ax.plot(
            x,
            y,
            color=color if series.own else style[0],
            linestyle=style[1],
            linewidth=1.2,
            alpha=0.6 if series.own and series.kind == "bound" else 1.0,
            label=series.name,
        )
        return
    if series.kind == "forecast" and series.panel != "replicas":
        # Forecast values at their instants: a line between points, not steps.
        ax.plot(_x(data, series.x), finite(series.y), color="#ff7f0e", linestyle="--", linewidth=1.3, label=series.name)
        return
    xs, ys = held(series.x, series.y, data.end)
    x, y = _x(data, xs), finite(ys)
    if series.kind == "real":
        ax.step(x, y, where="post", color="#7f7f7f", linewidth=1.4, alpha=0.8, label=series.name)
    elif series.kind == "old":
        ax.step(x, y, where="post", color="black", linestyle=":", linewidth=1.4, label=series.name)
    elif series.kind == "desired":
        ax.step(x, y, where="post", color=color, linestyle="--", linewidth=1.0, alpha=0.7, label=series.name)
    elif series.kind == "forecast":
        ax.step(x, y, where="post", color="#ff7f0e", linestyle=":", linewidth=1.4, label=series.name)
    else:
        ax.step(
            x,
            y,
            where="post",
            color=color,
            linewidth=2.0 if series.panel == "replicas" else 1.5,
            linestyle="-" if series.run == 0 else (0, (4, 2)),
            label=series.name,
        )


def _band(data: PlotData, ax: Any, series: Series, many: bool, blocked: list[str]) -> None:
    """Shade the time each step of ``series`` holds: the whole height for one run, a strip per run
    along the bottom when runs are compared (so both stay visible). One artist for all spans."""
    if series.kind == "limit":
        color = REASON_COLORS.get(series.reason or "", OTHER_REASON_COLOR)
    else:
        color = (
            BLOCKED_COLORS[blocked.index(series.reason or "") % len(BLOCKED_COLORS)]
            if series.kind == "blocked"
            else "#7f7f7f"
        )
    low, high = (series.run * STRIP, (series.run + 1) * STRIP) if many and series.kind == "limit" else (0.0, 1.0)
    xs: list[float] = []
    tops: list[float] = []
    for start, end in runs_of(series.x, series.y, data.end):
        xs += [start, start, end, end]
        tops += [low, high, high, low]
    ax.fill_between(
        _x(data, xs),
        low,
        tops,
        transform=ax.get_xaxis_transform(),
        color=color,
        alpha=0.7 if high - low < 1 else 0.25,
        linewidth=0,
        label=series.name,
    )
