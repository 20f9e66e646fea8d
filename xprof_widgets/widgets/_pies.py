"""Pie charts of shares (time by op, by type, by kernel) as BokehJS documents (`_charts`).

The largest slices are drawn and the rest is one "other" slice, so a pie of thousands of ops
stays readable. The legend is not Bokeh's: the item carries its slices (`legend`: full name,
share, time, color) and the view lists them beside the pie as HTML (js/src/charts/pie_legend.js),
where a long name is cut as the tables cut it (a kernel keeps its function's name) and the full
name shows on hover; a canvas legend can do neither.
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
_SIZE = 190  # px: the pie's square frame; the view's legend sits to its right


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
    names = [str(k) for k in shown.index]
    values_text = [f"{v:,.3f} {unit}" for v in shown.to_numpy(np.float64)]
    shares = [f"{s:.1%}" for s in share]
    colors = [("#c7c7c7" if k == OTHER else _PALETTE[i % len(_PALETTE)])
              for i, k in enumerate(shown.index)]
    data = _charts.source({
        "start": start, "end": end, "color": colors, "name": names, "value": values_text,
        "share": shares,
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
                       line_color="#ffffff", line_width=1)
    fig.add_tool(_charts.hover([wedges], [("", "@name"), ("time", "@value (@share)")]))
    item = _charts.json_item(fig)
    item["legend"] = [{"name": n, "share": s, "value": v, "color": c}
                      for n, s, v, c in zip(names, shares, values_text, colors, strict=True)]
    return item
