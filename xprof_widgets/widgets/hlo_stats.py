"""`HloStats` and `RooflineModel`: XProf's HLO op table and roofline model in notebook cells.

    hlo = xw.HloStats("/logs/run")
    hlo.to_dataframe()                 # one row per HLO op: times, rates, bandwidths, bound by
    roof = xw.RooflineModel("/logs/run")
    roof.to_dataframe()                # program rows (Total, Average, steps) and op rows
    roof.step = "3"; roof.memory = "VMEM Read"   # the view follows
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.hlo_stats import hlo_stats, op_metrics
from ..analysis.roofline_model import analyze_roofline_model
from ..analysis.roofline_rows import TOTAL, RooflineModelAnalysis
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, handler, jsonable
from ._pies import pie_item
from ._table import CsvExport, columnar

BOUND_COLORS = {"Compute": "#d62728", "HBM": "#1f77b4", "VMEM Read": "#2ca02c",
                "VMEM Write": "#98df8a", "CMEM Read": "#9467bd", "CMEM Write": "#c5b0d5",
                "Unknown": "#7f7f7f", "": "#7f7f7f"}
"""Point colours by bottleneck, shared by the chart and its legend in the view."""
MEMORY_INTENSITY = {"HBM": "hbm_operational_intensity",
                    "CMEM Read": "cmem_read_operational_intensity",
                    "CMEM Write": "cmem_write_operational_intensity",
                    "VMEM Read": "vmem_read_operational_intensity",
                    "VMEM Write": "vmem_write_operational_intensity"}


class HloStats(CsvExport, RequestWidget):
    """Every device HLO op: time, self time, FLOP rates, bandwidths, intensity, bound by.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).
    """

    _bundle = "hlo_stats.js"
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        self.profile = profile
        self._frame = hlo_stats(profile)
        _, analysis, peaks = op_metrics(profile)
        super().__init__(_summary=jsonable({
            "device": peaks.name, "kind": peaks.kind, "cores": peaks.cores,
            "ops": len(self._frame), "total_time_us": analysis.total_time_ps / 1e6,
            "idle_time_us": analysis.idle_time_ps / 1e6, "source": profile.source,
            "notes": list(analysis.notes), "on_chip": _on_chip(peaks)}), **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per HLO op, by self time (see docs for the columns)."""
        return self._frame.copy()

    @handler("table")
    def _table(self) -> dict:
        by_category = self._frame.groupby("category")["total_self_time_us"].sum()
        item = pie_item(by_category, "Self time by category")
        charts = [{"key": "categories", "title": "Self time by category", "item": item}] \
            if item else []
        return {"rows": columnar(self._frame), "charts": charts}

    def __repr__(self) -> str:
        return f"<HloStats {self.profile.source!r} ops={len(self._frame)}>"


class RooflineModel(CsvExport, RequestWidget):
    """Programs (whole profile, per step) and ops against the device's roofs; opened from the
    same arguments as `HloStats`."""

    _bundle = "roofline_model.js"

    include_infeed_outfeed = traitlets.Bool(True, help="Count infeed and outfeed ops (and "
                                            "their time) in programs and ops.").tag(sync=True)
    step = traitlets.Unicode(TOTAL, help="The program row drawn with the ops: 'Total', "
                             "'Average' or a step number.").tag(sync=True)
    memory = traitlets.Unicode("HBM", help="The memory whose roof and intensity the chart "
                               "shows: 'HBM', or an on-chip memory with a peak.").tag(sync=True)
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        self.profile = profile
        self.analysis: RooflineModelAnalysis = analyze_roofline_model(profile)
        table = self.analysis.table
        steps = [s for s in dict.fromkeys(table["step"]) if s != TOTAL]
        peaks = self.analysis.peaks
        super().__init__(_summary=jsonable({
            "device": peaks.name, "kind": peaks.kind, "cores": peaks.cores,
            "peak_flop_rate_gflops": peaks.flops / 1e9, "steps": steps,
            "ceilings": self.analysis.ceilings().to_dict("records"),
            "ops": int(((table["step"] == TOTAL) & (table["category"] != "Program")
                        & table["include_infeed_outfeed"]).sum()),
            "source": profile.source, "on_chip": _on_chip(peaks),
            "feeds": self.analysis.has_feeds}), **kwargs)

    @traitlets.validate("step")
    def _check_step(self, proposal: dict) -> str:
        value = str(proposal["value"])
        if value not in set(self.analysis.table["step"]):
            raise traitlets.TraitError(f"step={value!r}: expected Total, Average or one of the "
                                       "profile's steps (roof.to_dataframe()['step'])")
        return value

    def to_dataframe(self) -> pd.DataFrame:
        """Every program and op row, both with and without infeed/outfeed (see docs)."""
        return self.analysis.table.copy()

    def ceilings(self) -> pd.DataFrame:
        """The roofs: peak FLOP rate and each memory's peak bandwidth, with ridge points."""
        return self.analysis.ceilings()

    @handler("roofline")
    def _roofline(self, include_infeed_outfeed: bool, step: str, memory: str) -> dict:
        table = self.analysis.table
        table = table[table["include_infeed_outfeed"] == bool(include_infeed_outfeed)]
        programs = table[table["category"] == "Program"]
        ops = table[(table["step"] == TOTAL) & (table["category"] != "Program")]
        program = programs[programs["step"] == str(step)]
        figure = roofline_figure(self.analysis, memory, program)
        return {"rows": columnar(pd.concat([programs, ops], ignore_index=True)),
                "charts": [{"key": "roofline", "title": "Roofline",
                            "item": _charts.json_item(figure)}],
                "colors": BOUND_COLORS, "intensity": MEMORY_INTENSITY.get(memory,
                                                                          MEMORY_INTENSITY["HBM"])}

    def __repr__(self) -> str:
        s = self._summary
        return (f"<RooflineModel {self.profile.source!r} {s['device']} ops={s['ops']} "
                f"steps={max(0, len(s['steps']) - 1)}>")


def roofline_figure(analysis: RooflineModelAnalysis, memory: str,
                    program: pd.DataFrame) -> _charts.Figure:
    """Log-log roofline of one memory: its roof and the compute roof as lines, the chosen
    program as a star; the ops' points come from the view (source named "ops"), which draws
    the rows its table keeps."""
    ceilings = analysis.ceilings().set_index("memory")
    peaks = analysis.peaks
    fig = _charts.Figure(title=f"Roofline: {peaks.name} ({memory})", x_type="log", y_type="log",
                         height=380, x_label=f"operational intensity (FLOP / {memory} byte)",
                         y_label="FLOP rate (FLOP/s)",
                         tools="pan,wheel_zoom,box_zoom,reset,save")
    if memory in ceilings.index and peaks.flops > 0:
        bandwidth = float(ceilings.loc[memory, "peak_bw_gbps"]) * 1e9
        ridge = peaks.flops / bandwidth
        grid = np.geomspace(ridge / 1e4, ridge * 1e3, 120)
        roof = _charts.source({"x": grid, "y": np.minimum(peaks.flops, grid * bandwidth)})
        fig.glyph("Line", roof, x=_charts.field("x"), y=_charts.field("y"), line_width=2,
                  line_color="#444444", legend_label=f"roof: {_si(peaks.flops)}FLOP/s, "
                  f"{memory} {_si(bandwidth)}B/s")
        fig.add_layout(_charts.model("Span", location=ridge, dimension="height",
                                     line_dash=[4, 4], line_color="#888888"))
    points = _charts.source({"x": [], "y": [], "size": [], "color": [], "name": [],
                             "category": [], "bound": [], "time": []}, name="ops")
    dots = fig.glyph("Scatter", points, x=_charts.field("x"), y=_charts.field("y"),
                     size=_charts.field("size"), fill_color=_charts.field("color"),
                     line_color="#333333", line_width=0.5, fill_alpha=0.7, line_alpha=0.7)
    fig.add_tool(_charts.hover([dots], [
        ("op", "@name"), ("category", "@category"), ("time", "@time"), ("bound by", "@bound"),
        ("intensity", "@x{0.00} FLOP/B"), ("rate", "@y{0.00 a}FLOP/s")]))
    if len(program):
        row = program.iloc[0]
        x = float(row[MEMORY_INTENSITY.get(memory, MEMORY_INTENSITY["HBM"])])
        y = float(row["measured_flop_rate_gflops"]) * 1e9
        if x > 0 and y > 0:
            star = _charts.source({"x": [x], "y": [y], "name": [f"program ({row['step']})"]})
            fig.glyph("Scatter", star, x=_charts.field("x"), y=_charts.field("y"), size=18,
                      marker="star", fill_color="#ff7f0e", line_color="#333333",
                      legend_label=f"program, step {row['step']}")
    fig.legend_of().update(location="bottom_right", label_text_font_size="10px")
    return fig


def _on_chip(peaks: Any) -> list[str]:
    """The on-chip memories (`cmem_read`, ...) the device states a peak for: the views show
    their bandwidth columns, and leave out columns no op could fill."""
    return [m for m in ("cmem_read", "cmem_write", "vmem_read", "vmem_write")
            if peaks.kind == "TPU" and peaks.of(m) > 0]


def _si(value: float) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}"
    return f"{value:.3g} " if math.isfinite(value) else "? "
