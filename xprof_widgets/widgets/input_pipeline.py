"""`InputPipeline`: XProf's input pipeline analyzer in a notebook cell.

The analysis runs when the widget is made (so bad input fails in the cell); the view asks for
one report after it renders: the summary, the step-time statistics, three Bokeh charts (time
per step by part, input share per step, host input time by category) and the input-op table.

    ip = xw.InputPipeline("/logs/run")
    ip.verdict, ip.input_share        # "HIGHLY", 0.42
    ip.to_dataframe()                 # one row per step: compute_us, input_us, ...
    ip.input_ops()                    # the host input-op table
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.input_pipeline import (
    DEFAULT_INPUT_PATTERN,
    HIGHLY_PCT,
    HOST_CATEGORIES,
    MODERATELY_PCT,
    OP_COLUMNS,
    InputPipelineAnalysis,
    analyze_input_pipeline,
)
from ..analysis.step_breakdown import CATEGORIES
from ..analysis.steps import HOW_TO_MARK
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, handler, jsonable

STEP_COLORS = {"compute_us": "#4e79a7", "collectives_us": "#76b7b2",
               "device_to_device_us": "#59a14f", "host_to_device_us": "#f28e2b",
               "input_us": "#e15759", "output_us": "#edc948", "compile_us": "#b07aa1",
               "kernel_launch_us": "#ff9da7", "host_compute_us": "#9c755f", "other_us": "#bab0ac"}
"""One colour per step-breakdown category, in every tool that draws steps."""
PARTS = [(column, name, STEP_COLORS[column]) for column, name in CATEGORIES]
"""(column, legend, color): the step-time graph, bottom to top (step_breakdown.CATEGORIES)."""


def drawn_parts(steps: pd.DataFrame) -> list[str]:
    """The step-breakdown columns a chart of `steps` draws and names: those that hold time (a
    CPU run has no device parts); its tables and DataFrames keep every column."""
    held = [column for column, _, _ in PARTS if steps[column].to_numpy().any()]
    return held or ["other_us"]
CATEGORY_COLORS = dict(zip(HOST_CATEGORIES, ["#f28e2b", "#e15759", "#ff9d9a", "#59a14f",
                                             "#bab0ac"], strict=True))
OP_TITLES = ["Input Op", "Count", "Total Time (ms)", "Total Time %", "Total Self Time (ms)",
             "Total Self Time %", "Category"]


class InputPipeline(RequestWidget):
    """Is the program waiting for input, and what does the input cost on the host?

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        input_pattern: regular expression (searched in event names) for user annotations that
            are input work; the default takes names starting with a word such as `input`,
            `data`, `batch`, `load`, `read`, `prefetch` or `preprocess`. tf.data, grain and
            host-to-device copies are recognised whatever the pattern.
        run, host: which run and host(s) to open (default: the newest run, every host).
    """

    _bundle = "input_pipeline.js"
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile,
                 input_pattern: str = DEFAULT_INPUT_PATTERN, *, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        analysis = analyze_input_pipeline(profile, input_pattern)
        super().__init__(title=_title(profile), **kwargs)
        self.profile = profile
        self.analysis = analysis

    # ---- pandas face --------------------------------------------------------------------------
    def to_dataframe(self) -> pd.DataFrame:
        """One row per step: step, name, start_us, duration_us, the step breakdown's
        categories (compute_us, ..., input_us, ..., host_compute_us, other_us; see
        analysis/step_breakdown.py), input_share, device, before_step_us,
        input_before_step_us."""
        return self.analysis.steps.copy()

    def left_out_steps(self) -> pd.DataFrame:
        """Steps found but not counted, as XProf counts them: host, step, name, reason (no
        compute inside the marker; the first or last of a host-marked run of more than 5)."""
        return self.analysis.left_out_steps.copy()

    def input_ops(self) -> pd.DataFrame:
        """Host input operations: input_op, count, total/self time (ms and % of all input-op
        self time), category; largest self time first."""
        return self.analysis.input_ops.copy()

    def host_breakdown(self) -> pd.Series:
        """Self time (ms) of host input operations per category."""
        return self.analysis.host_breakdown.copy()

    def step_time_stats(self) -> pd.Series:
        return self.analysis.step_time_stats()

    @property
    def verdict(self) -> str | None:
        """HIGHLY, MODERATELY or NOT (input-bound); None without steps."""
        return self.analysis.verdict

    @property
    def input_share(self) -> float:
        """Share of step time spent waiting for input (0..1); NaN without steps."""
        return self.analysis.input_share

    def recommendation(self) -> str:
        return self.analysis.recommendation()

    # ---- the view's request -------------------------------------------------------------------
    @handler("report")
    def _report(self) -> dict:
        return report(self.analysis)

    def __repr__(self) -> str:
        a = self.analysis
        if a.verdict is None:
            return f"<InputPipeline {self.profile.source!r}: no steps, {len(a.input_ops)} input ops>"
        return (f"<InputPipeline {self.profile.source!r} steps={len(a.steps)} "
                f"input={a.input_share:.1%} ({a.verdict} input-bound)>")


def _title(profile: Profile) -> str:
    run = f" (run {profile.run})" if profile.run else ""
    return f"{profile.source}{run}"


def report(analysis: InputPipelineAnalysis) -> dict:
    """Everything the view draws, JSON-able: summary, stats, charts, host breakdown, op table."""
    steps = analysis.steps
    markers = analysis.step_markers
    has_steps = len(steps) > 0
    stats = analysis.step_time_stats().to_dict() if has_steps else None
    share = analysis.input_share
    largest = analysis.largest_host_cost()
    breakdown = analysis.host_breakdown
    total_host = float(breakdown.sum())
    return jsonable({
        "summary": {
            "verdict": analysis.verdict,
            "input_share_pct": 100 * share if has_steps else None,
            "thresholds_pct": [MODERATELY_PCT, HIGHLY_PCT],
            "recommendation": analysis.recommendation(),
            "steps": len(steps),
            "step_source": markers.source,
            "largest_host_cost": largest[0] if largest else None,
        },
        "left_out": analysis.left_out_steps[["name", "reason"]].to_dict("records"),
        "no_steps": None if has_steps else {
            "looked_for": list(markers.looked_for), "how_to_mark": HOW_TO_MARK},
        "stats": stats,
        "charts": {
            "steps": _charts.json_item(step_time_figure(steps)) if has_steps else None,
            "share": _charts.json_item(input_share_figure(steps)) if has_steps else None,
            "host": _charts.json_item(host_figure(breakdown)) if total_host > 0 else None,
        },
        "host_breakdown": [{"category": c, "ms": float(breakdown[c]), "color": CATEGORY_COLORS[c],
                            "pct": 100 * float(breakdown[c]) / total_host if total_host else 0.0}
                           for c in HOST_CATEGORIES],
        "ops": {"titles": OP_TITLES, "columns": OP_COLUMNS,
                "rows": analysis.input_ops[OP_COLUMNS].to_numpy(object).tolist()},
    })


# ---- charts -----------------------------------------------------------------------------------
def _step_source(steps: pd.DataFrame) -> dict:
    data: dict[str, Any] = {
        "x": steps["step"].to_numpy(np.int64),
        "name": [f"{n} {s}" for n, s in zip(steps["name"], steps["step"], strict=True)],
        "total": steps["duration_us"].to_numpy(np.float64) / 1000,
        "share": 100 * steps["input_share"].to_numpy(np.float64),
        "device": steps["device"].astype(str).tolist(),
    }
    for column, _, _ in PARTS:
        data[column] = steps[column].to_numpy(np.float64) / 1000
    return data


def step_time_figure(steps: pd.DataFrame) -> _charts.Figure:
    """Stacked bars: each step's time split into the step breakdown's categories."""
    source = _charts.source(_step_source(steps))
    fig = _charts.Figure(title="Step time", height=300, x_label="step", y_label="ms",
                         tools="xpan,xwheel_zoom,box_zoom,reset,save",
                         y_range=_charts.model("DataRange1d", start=0))
    columns = drawn_parts(steps)
    drawn = [part for part in PARTS if part[0] in columns]
    bars = [fig.glyph("VBar", source, name=column, x=_charts.field("x"), width=0.8,
                      bottom=_charts.stack(*columns[:k]), top=_charts.stack(*columns[:k + 1]),
                      fill_color=color, hatch_color=color, line_color=None, legend_label=label)
            for k, (column, label, color) in enumerate(drawn)]
    fig.add_tool(_charts.hover(bars, [
        ("step", "@name"), ("step time", "@total{0.000} ms"),
        *[(label.lower(), f"@{column}{{0.000}} ms") for column, label, _ in drawn],
        ("input share", "@share{0.0}%"), ("device", "@device")]))
    fig.x_grid["attributes"]["grid_line_color"] = None
    fig.legend_of().update(orientation="horizontal", label_text_font_size="10px",
                           click_policy="hide", border_line_color=None)
    fig.place_legend_above()
    return fig


def input_share_figure(steps: pd.DataFrame) -> _charts.Figure:
    """Each step's share waiting for input, against XProf's 5% and 20% thresholds."""
    data = _step_source(steps)
    top = max(25.0, float(np.nanmax(data["share"], initial=0)) * 1.1)
    fig = _charts.Figure(title="Share of each step waiting for input", height=220,
                         x_label="step", y_label="%",
                         y_range=_charts.model("Range1d", start=0, end=min(top, 105)),
                         tools="xpan,xwheel_zoom,box_zoom,reset,save")
    bars = fig.glyph("VBar", _charts.source(data), x=_charts.field("x"),
                     top=_charts.field("share"), width=0.8, fill_color="#e15759",
                     hatch_color="#e15759", line_color=None)
    for pct, label in ((MODERATELY_PCT, "moderately"), (HIGHLY_PCT, "highly")):
        fig.add_layout(_charts.model("Span", location=pct, dimension="width",
                                     line_dash="dashed", line_color="#666", line_width=1))
        fig.add_layout(_charts.model(
            "Label", x=0, y=pct, x_units="screen", text=f" {label} input-bound {pct:g}%",
            text_font_size="9px", text_color="#555", text_baseline="bottom",
            background_fill_color="white", background_fill_alpha=0.7))
    fig.add_tool(_charts.hover([bars], [
        ("step", "@name"), ("waiting for input", "@share{0.0}%"),
        ("step time", "@total{0.000} ms")]))
    fig.x_grid["attributes"]["grid_line_color"] = None
    return fig


def host_figure(breakdown: pd.Series) -> _charts.Figure:
    """Horizontal bars: host input-op self time per category."""
    categories = list(HOST_CATEGORIES)
    total = float(breakdown.sum())
    source = _charts.source({
        "category": categories, "ms": [float(breakdown[c]) for c in categories],
        "pct": [100 * float(breakdown[c]) / total for c in categories],
        "color": [CATEGORY_COLORS[c] for c in categories]})
    fig = _charts.Figure(title="Host input time by category (self time)", height=200,
                         x_label="ms", toolbar_location=None,
                         y_factors=list(reversed(categories)),
                         x_range=_charts.model("DataRange1d", start=0))
    bars = fig.glyph("HBar", source, y=_charts.field("category"), right=_charts.field("ms"),
                     height=0.7, fill_color=_charts.field("color"),
                     hatch_color=_charts.field("color"), line_color=None)
    fig.add_tool(_charts.hover([bars], [
        ("category", "@category"), ("self time", "@ms{0.000} ms (@pct{0.0}%)")]))
    fig.y_grid["attributes"]["grid_line_color"] = None
    return fig
