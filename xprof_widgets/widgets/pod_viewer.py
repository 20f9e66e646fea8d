"""`PodViewer`: every core's and host's steps, what each spent its time on, and who straggles.

The view asks for one report after it renders: the summary, a heatmap of step time (rows are the
hosts of a multi-host run, or the cores of one host; columns the steps; each cell coloured by its
time against the step's median, stragglers outlined), the slowest core's breakdown per step, and
the table of every step and core (the shared table: sort, filter, facets, CSV).

    pv = xw.PodViewer("/logs/run")
    pv.to_dataframe()      # a row per step, host and core: the parts, bottleneck, straggler
    pv.steps()             # a row per step: the slowest core, its bottleneck, straggler counts
    pv.by_host()           # a row per step and host
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.input_pipeline import DEFAULT_INPUT_PATTERN
from ..analysis.pod_viewer import (
    PARTS,
    STRAGGLER_RATIO,
    XPROF_NAMES,
    PodViewerAnalysis,
    analyze_pod_viewer,
)
from ..analysis.steps import HOW_TO_MARK
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, handler, jsonable, profile_title
from ._table import CsvExport, columnar
from .input_pipeline import STEP_COLORS as PART_COLORS
from .input_pipeline import drawn_parts

RATIO_TOP = 1.25
"""The heatmap's colour saturates at this many times the step's median."""
MAX_CELLS = 20_000
"""Cells the heatmap draws (rows x steps); beyond, the last steps are left to the table."""
TABLE_COLUMNS = ["step", "name", "host", "core", "duration_us", *PARTS, "bottleneck",
                 "step_median_us", "straggler"]


class PodViewer(RequestWidget, CsvExport):
    """Each step of every core and host: its parts (XProf's pod viewer), bottleneck, stragglers.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`;
            every host of the run is opened (a pod is its hosts together).
        input_pattern: as the Input Pipeline's: names of user code that is input work.
        run, host: which run and host(s) to open (default: the newest run, every host).
    """

    _bundle = "pod_viewer.js"
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile,
                 input_pattern: str = DEFAULT_INPUT_PATTERN, *, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        self.profile = profile
        self.analysis: PodViewerAnalysis = analyze_pod_viewer(profile, input_pattern)
        super().__init__(title=profile_title(profile), **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """A row per step, host and core: step, name, host, core, start_us, duration_us, the
        parts (the step breakdown's categories: compute_us, collectives_us, ..., other_us;
        analysis/step_breakdown.py), bottleneck (XProf's name of the largest part),
        step_median_us, straggler, before_step_us."""
        return self.analysis.rows.copy()

    def steps(self) -> pd.DataFrame:
        """A row per step: the slowest core, its time and bottleneck, the median over cores,
        how many cores and hosts straggle."""
        return self.analysis.steps()

    def by_host(self) -> pd.DataFrame:
        """A row per step and host: its slowest core's time, the step's median over hosts, and
        whether the host straggles."""
        return self.analysis.by_host()

    @handler("report")
    def _report(self) -> dict:
        return report(self.analysis)

    def __repr__(self) -> str:
        rows = self.analysis.rows
        return (f"<PodViewer {self.profile.source!r}: {rows['step'].nunique()} steps, "
                f"{rows['host'].nunique()} hosts, {len(rows)} rows, "
                f"{int(rows['straggler'].sum())} straggling>")


def report(analysis: PodViewerAnalysis) -> dict:
    """Everything the view draws: summary, the two charts, the table's columns (the parts that
    hold time in some step)."""
    rows = analysis.rows
    if not len(rows):
        return {"message": "No training steps found, so there is nothing to break down.\n"
                           + HOW_TO_MARK}
    hosts = analysis.hosts
    by_host = len(hosts) > 1
    cells = analysis.by_host() if by_host else rows.rename(columns={"core": "row"})
    if by_host:
        cells = cells.rename(columns={"host": "row"})
    steps = analysis.steps()
    held = drawn_parts(rows)  # the view's table shows the parts with time; to_dataframe() all
    charts = {"heatmap": _charts.json_item(heatmap_figure(cells, "host" if by_host else "core")),
              "breakdown": _charts.json_item(breakdown_figure(rows))}
    if by_host:
        charts["hosts"] = _charts.json_item(host_figure(analysis.host_breakdown()))
    summary = {
        "steps": int(rows["step"].nunique()), "hosts": len(hosts),
        "cores": int(rows[["host", "core"]].drop_duplicates().shape[0]),
        "straggling_rows": int(rows["straggler"].sum()),
        "straggling_hosts": int(analysis.by_host()["straggler"].sum()) if by_host else 0,
        "bottleneck": str(steps["bottleneck"].mode().iat[0]),
        "avg_step_us": float(steps["duration_us"].mean()), "ratio": STRAGGLER_RATIO,
        "by": "host" if by_host else "core",
    }
    return jsonable({
        "summary": summary,
        "charts": charts,
        "parts": [{"key": p, "label": XPROF_NAMES[p], "color": PART_COLORS[p]} for p in held],
        "rows": columnar(rows, [c for c in TABLE_COLUMNS if c not in PARTS or c in held]),
    })


AT_MEDIAN, ABOVE, FAR_ABOVE = "#e3eaf4", (253, 212, 204), (203, 24, 29)
"""Cell colours: at or below the step's median; just above it, deepening to RATIO_TOP times it."""


def ratio_colors(ratio: np.ndarray) -> list[str]:
    """A cell's colour from its step time / the step's median (see AT_MEDIAN)."""
    ratio = np.nan_to_num(np.asarray(ratio, np.float64), nan=1.0)
    t = np.clip((ratio - 1) / (RATIO_TOP - 1), 0, 1)[:, None]
    rgb = np.rint(np.array(ABOVE) + t * (np.array(FAR_ABOVE) - np.array(ABOVE))).astype(int)
    return [AT_MEDIAN if r <= 1 else "#" + "".join(f"{v:02x}" for v in c)
            for r, c in zip(ratio.tolist(), rgb.tolist(), strict=True)]


def heatmap_figure(cells: pd.DataFrame, by: str) -> _charts.Figure:
    """Rows (hosts or cores) x steps; colour: time / the step's median; stragglers outlined."""
    labels = list(dict.fromkeys(cells["row"].astype(str)))
    steps = np.sort(cells["step"].unique())
    keep = steps[:max(1, MAX_CELLS // max(1, len(labels)))]
    cells = cells[cells["step"].isin(keep)]
    ratio = (cells["duration_us"] / cells["step_median_us"]).to_numpy(np.float64)
    straggler = cells["straggler"].to_numpy(bool)
    source = _charts.source({
        "step": cells["step"].to_numpy(np.int64), "row": cells["row"].astype(str).tolist(),
        "ms": cells["duration_us"].to_numpy(np.float64) / 1000,
        "median": cells["step_median_us"].to_numpy(np.float64) / 1000,
        "ratio": ratio, "bottleneck": cells["bottleneck"].astype(str).tolist(),
        "color": ratio_colors(ratio),
        "line": np.where(straggler, "#111111", "#ffffff").tolist(),
        "width": np.where(straggler, 2.5, 0.5)}, name="cells")
    height = min(640, 90 + 22 * len(labels))
    fig = _charts.Figure(title=f"Step time by {by}, against the step's median", height=height,
                         x_label="step", tools="xpan,xwheel_zoom,reset,save",
                         y_factors=list(reversed(labels)), active_scroll=None)
    rects = fig.glyph("Rect", source, x=_charts.field("step"), y=_charts.field("row"),
                      width=0.95, height=0.9, fill_color=_charts.field("color"),
                      line_color=_charts.field("line"), line_width=_charts.field("width"))
    fig.add_tool(_charts.hover([rects], [
        (by, "@row"), ("step", "@step"), ("step time", "@ms{0.000} ms"),
        ("step median", "@median{0.000} ms"), ("vs median", "@ratio{0.00}×"),
        ("bottleneck", "@bottleneck")]))
    fig.x_grid["attributes"]["grid_line_color"] = None
    fig.y_grid["attributes"]["grid_line_color"] = None
    return fig


def host_figure(hosts: pd.DataFrame) -> _charts.Figure:
    """Stacked bars, one per host (a rank of a PyTorch run): its average step on its slowest
    core, split into the parts (ms), so a rank that waits or computes more stands out."""
    labels = hosts["host"].astype(str).tolist()
    data: dict[str, Any] = {"y": labels, "steps": hosts["steps"].to_numpy(np.int64),
                            "bottleneck": hosts["bottleneck"].astype(str).tolist(),
                            "straggling": hosts["straggling_steps"].to_numpy(np.int64),
                            "total": hosts["duration_us"].to_numpy(np.float64) / 1000}
    for part in PARTS:
        data[part] = hosts[part].to_numpy(np.float64) / 1000
    source = _charts.source(data)
    parts = drawn_parts(hosts)
    fig = _charts.Figure(title="The average step of each host, on its slowest core",
                         height=min(640, 110 + 26 * len(labels)), x_label="ms",
                         tools="xpan,xwheel_zoom,reset,save", y_factors=list(reversed(labels)),
                         x_range=_charts.model("DataRange1d", start=0), active_scroll=None)
    bars = stacked_bars(fig, source, parts, horizontal=True)
    fig.add_tool(_charts.hover(bars, [
        ("host", "@y"), ("steps", "@steps"), ("average step", "@total{0.000} ms"),
        ("bottleneck", "@bottleneck"), ("straggling steps", "@straggling"),
        *[(XPROF_NAMES[p].lower(), f"@{p}{{0.000}} ms") for p in parts]]))
    fig.y_grid["attributes"]["grid_line_color"] = None
    fig.legend_of().update(orientation="horizontal", label_text_font_size="10px",
                           click_policy="hide", border_line_color=None)
    fig.place_legend_above()
    return fig


def stacked_bars(fig: _charts.Figure, source: dict, parts: list[str],
                 horizontal: bool) -> list[dict]:
    """One bar glyph per part, each stacked on the parts before it, in XProf's colours; bars
    along `y` (0.7 high) when horizontal, else along `x` (0.8 wide)."""
    glyph, at, size, width, low, high = (("HBar", "y", "height", 0.7, "left", "right") if horizontal
                                         else ("VBar", "x", "width", 0.8, "bottom", "top"))
    return [fig.glyph(glyph, source, **{at: _charts.field(at), size: width,
                                        low: _charts.stack(*parts[:k]),
                                        high: _charts.stack(*parts[:k + 1])},
                      fill_color=PART_COLORS[p], hatch_color=PART_COLORS[p], line_color=None,
                      legend_label=XPROF_NAMES[p])
            for k, p in enumerate(parts)]


def breakdown_figure(rows: pd.DataFrame) -> _charts.Figure:
    """Stacked bars: each step's slowest core, split into the parts (ms)."""
    slowest = rows.loc[rows.groupby("step", sort=True)["duration_us"].idxmax()]
    data: dict[str, Any] = {"x": slowest["step"].to_numpy(np.int64),
                            "where": (slowest["host"] + " " + slowest["core"]).tolist(),
                            "bottleneck": slowest["bottleneck"].astype(str).tolist(),
                            "total": slowest["duration_us"].to_numpy(np.float64) / 1000}
    for part in PARTS:
        data[part] = slowest[part].to_numpy(np.float64) / 1000
    source = _charts.source(data)
    parts = drawn_parts(slowest)
    fig = _charts.Figure(title="Each step on its slowest core", height=280, x_label="step",
                         y_label="ms", tools="xpan,xwheel_zoom,box_zoom,reset,save",
                         y_range=_charts.model("DataRange1d", start=0))
    bars = stacked_bars(fig, source, parts, horizontal=False)
    fig.add_tool(_charts.hover(bars, [
        ("step", "@x"), ("core", "@where"), ("step time", "@total{0.000} ms"),
        ("bottleneck", "@bottleneck"),
        *[(XPROF_NAMES[p].lower(), f"@{p}{{0.000}} ms") for p in parts]]))
    fig.x_grid["attributes"]["grid_line_color"] = None
    fig.legend_of().update(orientation="horizontal", label_text_font_size="10px",
                           click_policy="hide", border_line_color=None)
    fig.place_legend_above()
    return fig
