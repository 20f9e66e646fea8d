"""One horizontal bar chart of named values, as the counter tools draw it (utilization per
unit, stall per DCN collective): bars in the order given, top to bottom."""

from __future__ import annotations

from collections.abc import Sequence

from . import _charts

_BAR_PX, _CHROME_PX = 15, 70


def hbar_item(labels: Sequence[str], values: Sequence[float], *, title: str, x_label: str,
              tip: str) -> dict:
    """The chart's JSON item; `tip` formats @value in the hover (e.g. "@value{0.0}%")."""
    labels = [str(v) for v in labels]
    source = _charts.source({"label": labels, "value": [float(v) for v in values]})
    fig = _charts.Figure(title=title, height=_CHROME_PX + _BAR_PX * max(len(labels), 1),
                         x_label=x_label, toolbar_location=None,
                         y_factors=list(reversed(labels)),
                         x_range=_charts.model("DataRange1d", start=0))
    bars = fig.glyph("HBar", source, y=_charts.field("label"), right=_charts.field("value"),
                     height=0.7, fill_color=_charts.CATEGORY10[0], line_color=None)
    fig.add_tool(_charts.hover([bars], [("", "@label"), ("", tip)]))
    fig.y_grid["attributes"]["grid_line_color"] = None
    return _charts.json_item(fig)
