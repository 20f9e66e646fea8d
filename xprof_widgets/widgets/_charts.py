"""Bokeh charts as BokehJS documents written directly: JSON items without importing bokeh.

bokeh's Python model layer costs about 0.4 s to import and 50 ms per figure, while a view only
needs the document BokehJS reads (`embed_item`). A chart here writes just what it sets: every
other property (tickers, formatters, scales, selections, tool overlays) is left to BokehJS's own
defaults, so one document suits every BokehJS 3.x a kernel may ship.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ._bokeh import bokeh_js_version

_ids = itertools.count(1)
_TOOLS = {
    "pan": ("PanTool", {}), "xpan": ("PanTool", {"dimensions": "width"}),
    "wheel_zoom": ("WheelZoomTool", {}), "xwheel_zoom": ("WheelZoomTool", {"dimensions": "width"}),
    "box_zoom": ("BoxZoomTool", {"dimensions": "both"}), "reset": ("ResetTool", {}),
    "save": ("SaveTool", {}), "tap": ("TapTool", {}),
}
CATEGORY10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
              "#7f7f7f", "#bcbd22", "#17becf")
"""Bokeh's Category10 palette."""


def model(kind: str, /, **attributes: Any) -> dict:
    """A BokehJS model of type `kind` (None-valued attributes are written as null)."""
    return {"type": "object", "name": kind, "id": f"xw{next(_ids)}", "attributes": attributes}


def field(name: str) -> dict:
    """A property read from the data source's column `name`."""
    return {"type": "field", "field": name}


def value(v: Any) -> dict:
    return {"type": "value", "value": v}


def stack(*fields: str) -> dict:
    """The sum of the given columns (bokeh's vbar_stack bottoms and tops)."""
    return {"type": "expr", "expr": model("Stack", fields=list(fields))}


def _spec(v: Any) -> Any:
    return v if isinstance(v, dict) and v.get("type") in ("field", "value", "expr") else value(v)


def column(values: Any) -> list:
    """A data-source column as a JSON list; non-finite numbers as BokehJS spells them (plain
    lists, not typed arrays: how BokehJS packs those changed between 3.x releases)."""
    array = np.asarray(values)
    if array.dtype.kind not in "fiub":
        return [str(v) for v in array.tolist()]
    out = array.tolist()
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        for k in np.flatnonzero(~np.isfinite(array)).tolist():
            word = "nan" if np.isnan(array[k]) else ("+inf" if array[k] > 0 else "-inf")
            out[k] = {"type": "number", "value": word}
    return out


def source(data: dict[str, Any], name: str | None = None) -> dict:
    """A ColumnDataSource of the given columns (lists or arrays)."""
    entries = [[key, column(values) if len(values) else []] for key, values in data.items()]
    return model("ColumnDataSource", data={"type": "map", "entries": entries},
                 **({"name": name} if name else {}))


class Figure:
    """A bokeh.plotting-like figure written as BokehJS models."""

    def __init__(self, *, title: str, height: int, x_label: str | None = None,
                 y_label: str | None = None, tools: str = "", toolbar_location: str | None =
                 "above", x_type: str = "linear", y_type: str = "linear",
                 x_range: dict | None = None, y_range: dict | None = None,
                 y_factors: list[str] | None = None, active_scroll: str | None = "auto"):
        self.x_axis = self._axis(x_type, x_label)
        self.y_axis = self._axis("categorical" if y_factors else y_type, y_label)
        self.x_grid = model("Grid", axis={"id": self.x_axis["id"]})
        self.y_grid = model("Grid", dimension=1, axis={"id": self.y_axis["id"]})
        if y_factors is not None:
            y_range = model("FactorRange", factors=list(y_factors))
        tool_models = [model(_TOOLS[t][0], **_TOOLS[t][1]) for t in tools.split(",") if t]
        toolbar = {} if active_scroll == "auto" else {"active_scroll": active_scroll}
        self.toolbar = model("Toolbar", tools=tool_models, **toolbar)
        self.legend: dict | None = None
        self.root = model(
            "Figure", height=height, sizing_mode="stretch_width", title=model("Title", text=title),
            x_range=x_range or model("DataRange1d"), y_range=y_range or model("DataRange1d"),
            x_scale=model(self._scale(x_type)),
            y_scale=model(self._scale("categorical" if y_factors else y_type)),
            renderers=[], toolbar=self.toolbar, toolbar_location=toolbar_location,
            below=[self.x_axis], left=[self.y_axis], center=[self.x_grid, self.y_grid])

    @staticmethod
    def _axis(kind: str, label: str | None) -> dict:
        name = {"linear": "LinearAxis", "log": "LogAxis", "categorical": "CategoricalAxis"}[kind]
        return model(name, **({"axis_label": label} if label else {}))

    @staticmethod
    def _scale(kind: str) -> str:
        return {"linear": "LinearScale", "log": "LogScale", "categorical": "CategoricalScale"}[kind]

    def glyph(self, kind: str, data: dict, *, legend_label: str | None = None,
              legend_field: str | None = None, nonselection: dict | None = None,
              hover: dict | None = None, name: str | None = None, **props: Any) -> dict:
        """A renderer of glyph `kind` (VBar, HBar, Quad, Line, Scatter) over the data source
        `data`; props are glyph properties (plain values, or field()/stack() specs);
        nonselection / hover: properties that change when not selected / hovered."""
        props = {key: _spec(v) for key, v in props.items()}
        extra = {}
        if nonselection is not None:
            extra["nonselection_glyph"] = model(kind, **{**props, **{
                key: _spec(v) for key, v in nonselection.items()}})
        if hover is not None:
            extra["hover_glyph"] = model(kind, **{**props, **{
                key: _spec(v) for key, v in hover.items()}})
        renderer = model("GlyphRenderer", data_source=data, glyph=model(kind, **props),
                         **extra, **({"name": name} if name else {}))
        self.root["attributes"]["renderers"].append(renderer)
        if legend_label is not None or legend_field is not None:
            label = value(legend_label) if legend_label is not None else field(legend_field)
            self.legend_of().setdefault("items", []).append(
                model("LegendItem", label=label, renderers=[{"id": renderer["id"]}]))
        return renderer

    def legend_of(self) -> dict:
        """The figure's legend (inside the plot until `place`d), made on first use."""
        if self.legend is None:
            self.legend = model("Legend")
            self.root["attributes"]["center"].append(self.legend)
        return self.legend["attributes"]

    def place_legend_above(self) -> None:
        attributes = self.root["attributes"]
        attributes["center"].remove(self.legend)
        attributes["above"] = [self.legend]

    def add_layout(self, annotation: dict) -> None:
        self.root["attributes"]["center"].append(annotation)

    def add_tool(self, tool: dict) -> None:
        self.toolbar["attributes"]["tools"].append(tool)


def hover(renderers: list[dict], tooltips: list[tuple[str, str]] | None, **props: Any) -> dict:
    return model("HoverTool", renderers=[{"id": r["id"]} for r in renderers],
                 tooltips=None if tooltips is None else [list(t) for t in tooltips], **props)


def json_item(figure: Figure) -> dict:
    """The document as `embedItem` (js/src/charts/bokeh.js) draws it: each model written in
    full where it first appears, by reference after."""
    seen: set[str] = set()

    def emit(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("type") == "object" and "id" in node:
                if node["id"] in seen:
                    return {"id": node["id"]}
                seen.add(node["id"])
                return {**node, "attributes": {k: emit(v) for k, v in node["attributes"].items()}}
            return {k: emit(v) for k, v in node.items()}
        if isinstance(node, list):
            return [emit(v) for v in node]
        return node

    root = figure.root
    return {"target_id": None, "root_id": root["id"],
            "doc": {"version": bokeh_js_version(), "title": "", "roots": [emit(root)]}}
