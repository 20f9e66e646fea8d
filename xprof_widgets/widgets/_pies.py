"""Pie charts of shares (time by op, by type, by kernel) as BokehJS documents (`_charts`).

The largest slices are drawn and the rest is one "other" slice, so a pie of thousands of ops
stays readable; the legend lists the slices with their share.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import _charts

SLICES = 10
"""Largest slices drawn; the rest becomes one "(other)" slice."""
OTHER = "(other)"
_PALETTE = (*_charts.CATEGORY10, "#aec7e8", "#ffbb78")
_SIZE = 190  # px: the pie's square frame; the legend sits to its right


def pie_item(values: pd.Series, title: str, unit: str = "µs") -> dict | None:
    """A pie of `values` (index: labels) as a JSON item for embedItem; None with fewer than two
    slices (a whole disc says nothing a table row does not)."""
    values = values[values > 0].sort_values(ascending=False, kind="stable")
    total = float(values.sum())
    if len(values) < 2 or not math.isfinite(total) or total <= 0:
        return None
    shown = values.iloc[:SLICES]
    if len(values) > SLICES:
        shown = pd.concat([shown, pd.Series({OTHER: float(values.iloc[SLICES:].sum())})])
    share = shown.to_numpy(np.float64) / total
    end = np.cumsum(share) * 2 * math.pi
    start = np.r_[0.0, end[:-1]]
    labels = [_short(str(k)) for k in shown.index]
    colors = [("#c7c7c7" if k == OTHER else _PALETTE[i % len(_PALETTE)])
              for i, k in enumerate(shown.index)]
    data = _charts.source({
        "start": start, "end": end, "color": colors, "name": [str(k) for k in shown.index],
        "legend": [f"{label} ({s:.1%})" for label, s in zip(labels, share, strict=True)],
        "value": [f"{v:,.3f} {unit}" for v in shown.to_numpy(np.float64)],
        "share": [f"{s:.1%}" for s in share],
    })
    fig = _charts.Figure(title=title, height=_SIZE, tools="", toolbar_location=None,
                         x_range=_charts.model("Range1d", start=-1.05, end=1.05),
                         y_range=_charts.model("Range1d", start=-1.05, end=1.05),
                         active_scroll=None)
    root = fig.root["attributes"]
    del root["sizing_mode"]
    root.update(frame_width=_SIZE, frame_height=_SIZE, outline_line_color=None,
                min_border_left=4, min_border_bottom=4)
    for part in (fig.x_axis, fig.y_axis, fig.x_grid, fig.y_grid):
        part["attributes"]["visible"] = False
    wedges = fig.glyph("Wedge", data, x=0, y=0, radius=1.0, start_angle=_charts.field("start"),
                       end_angle=_charts.field("end"), fill_color=_charts.field("color"),
                       line_color="#ffffff", line_width=1, legend_field="legend")
    fig.add_tool(_charts.hover([wedges], [("", "@name"), ("time", "@value (@share)")]))
    legend = fig.legend_of()
    legend.update(label_text_font_size="10px", glyph_height=12, glyph_width=12, spacing=1,
                  padding=4, margin=4, border_line_color=None)
    root["center"].remove(fig.legend)
    root["right"] = [fig.legend]
    return _charts.json_item(fig)


def _short(label: str, limit: int = 40) -> str:
    """A legend label: a long name keeps its start (the program, the kernel family) and its end
    (the op, the kernel variant)."""
    if len(label) <= limit:
        return label
    head = limit // 3
    return label[:head] + "…" + label[-(limit - head - 1):]
