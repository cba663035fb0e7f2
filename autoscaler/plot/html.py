"""Interactive HTML plots with plotly: one self-contained file (plotly.js inlined, works offline).

Hovering a step shows its values and what limited it. The plotted data is also embedded as JSON
(``<script type="application/json" id="autoscaler-plot-data">``) for scripts and tests, because
plotly itself stores numbers in a binary encoding.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from autoscaler.plot.series import OTHER_REASON_COLOR, REASON_COLORS, PlotData, Series

RUN_COLORS = ("#1f77b4", "#9467bd", "#2ca02c", "#8c564b")
DATA_ELEMENT_ID = "autoscaler-plot-data"


def _x(data: PlotData, values: list[float]) -> list[Any]:
    if data.absolute_times:
        return [datetime.fromtimestamp(v, UTC) for v in values]
    return values


def figure(data: PlotData) -> go.Figure:
    rows = len(data.panels)
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.5 / max(rows * 4, 1),
        subplot_titles=[title for title, _ in data.panels],
    )
    row_of = {title: index + 1 for index, (title, _) in enumerate(data.panels)}
    for series in data.series:
        fig.add_trace(_trace(data, series), row=row_of[series.panel], col=1)
    for index, (_, unit) in enumerate(data.panels):
        fig.update_yaxes(title_text=unit, row=index + 1, col=1)
    fig.update_xaxes(title_text="time (UTC)" if data.absolute_times else "seconds", row=rows, col=1)
    fig.update_layout(
        title=data.title,
        height=260 * rows + 120,
        hovermode="x",
        template="plotly_white",
        legend={"groupclick": "toggleitem"},
    )
    return fig


def _trace(data: PlotData, series: Series) -> go.Scatter:
    color = RUN_COLORS[series.run % len(RUN_COLORS)]
    x = _x(data, series.x)
    common: dict[str, Any] = {
        "x": x,
        "y": series.y,
        "name": series.name,
        "legendgroup": series.panel,
        "legendgrouptitle_text": series.panel,
    }
    if series.kind == "limit":
        return go.Scatter(
            mode="markers",
            marker={"color": REASON_COLORS.get(series.reason or "", OTHER_REASON_COLOR), "size": 7, "symbol": "square"},
            hovertemplate=f"{series.reason}<extra>%{{y}} replicas</extra>",
            **common,
        )
    if series.kind in ("failed", "blocked"):
        return go.Scatter(
            mode="markers",
            marker={"color": "#d62728" if series.kind == "blocked" else "#7f7f7f", "symbol": "x", "size": 7},
            **common,
        )
    line: dict[str, Any] = {"shape": "hv", "color": color, "width": 2}
    if series.kind == "target":
        line.update(color=color if series.own else "black", dash="dash", width=1, shape="linear")
    elif series.kind == "bound":
        line.update(color=color if series.own else "#b0b0b0", dash="dot", width=1, shape="linear")
    elif series.kind == "real":
        line.update(color="#7f7f7f")
    elif series.kind == "old":
        line.update(color="black", dash="dot")
    elif series.kind == "desired":
        line.update(dash="dash", width=1)
    elif series.kind == "forecast":
        line.update(color="#ff7f0e", dash="dot", width=1.5)
        if series.panel != "replicas":
            line.update(shape="linear", dash="dash")
    elif series.run:
        line.update(dash="dashdot")
    return go.Scatter(mode="lines", line=line, connectgaps=False, **common)


def write_html(data: PlotData, path: str) -> None:
    page = figure(data).to_html(full_html=True, include_plotlyjs=True)
    payload = json.dumps(data.data(), separators=(",", ":")).replace("</", "<\\/")
    block = f'<script type="application/json" id="{DATA_ELEMENT_ID}">{payload}</script>\n'
    page = page.replace("</body>", block + "</body>", 1)
    Path(path).write_text(page, encoding="utf-8")
