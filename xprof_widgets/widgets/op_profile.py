"""`OpProfile`: XProf's op profile in a notebook cell.

The widget syncs the overview (device, utilization, idle share, suggestions) and the table
controls; the view asks for the op table, a fusion's inside, an op's details and the roofline
chart on request. Setting a control from Python (`op.group_by = "program"`) redraws the view.

    op = xw.OpProfile("/logs/run")
    op.to_dataframe()                      # one row per op, every column
    op.group_by, op.sort_by = "program", "wasted_time"
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.op_profile import GROUPINGS, SORTS, OpProfileAnalysis, analyze_op_profile
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, handler, jsonable

MIN_OPS, MAX_OPS = 10, 100
ROOFLINE_OPS = 1000
"""Most ops the roofline draws (the longest ones); the rest are specks under them."""
_TABLE_COLUMNS = [
    "row", "parent", "level", "kind", "label", "op", "children", "fused", "time_us",
    "time_share", "cumulative_share", "occurrences", "avg_time_us", "framework_op",
    "flops_utilization", "bandwidth_utilization", "flop_rate", "arithmetic_intensity",
    "bound_by", "wasted_time_share",
]


class OpProfile(RequestWidget):
    """Where device time goes, op by op: a grouped table, details, a roofline.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).
        peak_tflops, peak_gbps: peak FLOP rate (TFLOP/s) and memory bandwidth (GB/s) of one
            core or device, replacing the profile's (or supplying them, e.g. for a CPU).
    """

    _bundle = "op_profile.js"

    group_by = traitlets.Enum(GROUPINGS, "category", help="Group ops by program, category or "
                              "provenance (framework op).").tag(sync=True)
    sort_by = traitlets.Enum(SORTS, "time", help="Order of groups and ops: time, wasted_time "
                             "or flops_utilization (largest first).").tag(sync=True)
    ops_shown = traitlets.Int(10, help=f"Ops shown per group, {MIN_OPS}..{MAX_OPS}."
                              ).tag(sync=True)
    top_90 = traitlets.Bool(False, help="Show only the ops that make up 90% of each group's "
                            "time.").tag(sync=True)
    exclude_idle = traitlets.Bool(False, help="Leave idle time out (shares of busy time)."
                                  ).tag(sync=True)
    name_filter = traitlets.Unicode("", help="Regular expression an op's name, framework op "
                                    "or category must match.").tag(sync=True)
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, *, peak_tflops: float | None = None,
                 peak_gbps: float | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        try:
            analysis: OpProfileAnalysis | None = analyze_op_profile(profile, peak_tflops,
                                                                    peak_gbps)
            summary = _summary_of(analysis)
            self._error: str | None = None
        except ProfileError as exc:
            analysis, summary, self._error = None, {"error": str(exc)}, str(exc)
        super().__init__(_summary=summary, **kwargs)
        self.profile = profile
        self.analysis = analysis

    @traitlets.validate("ops_shown")
    def _check_ops(self, proposal: dict) -> int:
        return int(min(MAX_OPS, max(MIN_OPS, proposal["value"])))

    def _analysis(self) -> OpProfileAnalysis:
        if self.analysis is None:
            raise ProfileError(self._error or "no op profile")
        return self.analysis

    # ---- pandas face --------------------------------------------------------------------------
    def to_dataframe(self) -> pd.DataFrame:
        """The flat op table: one row per op, every column, in real units (see docs)."""
        return self._analysis().to_dataframe()

    def table(self, **controls: Any) -> pd.DataFrame:
        """The grouped table the view shows, for the current controls (or the given ones)."""
        return self._analysis().table(**self._controls(controls))

    def overview(self) -> dict[str, Any]:
        """Device, total and idle time, overall utilization; see OpProfileAnalysis.overview."""
        return self._analysis().overview()

    def suggestions(self) -> list[str]:
        return self._analysis().suggestions()

    def fused_ops(self, op: int | str) -> pd.DataFrame:
        """The instructions inside a fusion op (by row of `to_dataframe` order or op name)."""
        return self._analysis().fused_ops(self._op_index(op))

    def details(self, op: int | str) -> dict[str, Any]:
        return self._analysis().details(self._op_index(op))

    def _op_index(self, op: int | str) -> int:
        ops = self._analysis().ops
        if isinstance(op, str):
            hits = ops.index[ops["name"] == op]
            if not len(hits):
                raise KeyError(f"no op named {op!r}")
            return int(ops.loc[hits, "time_ps"].idxmax())
        order = ops.sort_values("time_us", ascending=False).index
        return int(order[op])

    def _controls(self, given: dict) -> dict:
        controls = {"group_by": self.group_by, "sort_by": self.sort_by,
                    "ops_per_group": self.ops_shown, "top_fraction": 0.9 if self.top_90 else None,
                    "exclude_idle": self.exclude_idle, "name_filter": self.name_filter or None}
        controls.update(given)
        return controls

    # ---- requests from the view ---------------------------------------------------------------
    @handler("table")
    def _table(self, group_by: str, sort_by: str, ops_shown: int, top_90: bool,
               exclude_idle: bool, name_filter: str) -> dict:
        try:
            table = self._analysis().table(
                group_by=group_by, sort_by=sort_by,
                ops_per_group=int(min(MAX_OPS, max(MIN_OPS, ops_shown))),
                top_fraction=0.9 if top_90 else None, exclude_idle=exclude_idle,
                name_filter=name_filter or None)
        except ValueError as exc:  # a bad regular expression: the view shows it by the box
            return {"rows": [], "problem": str(exc)}
        return {"rows": _records(table, _TABLE_COLUMNS)}

    @handler("fused")
    def _fused(self, op: int) -> dict:
        frame = self._analysis().fused_ops(int(op))
        return {"op": int(op), "rows": _records(frame, list(frame.columns))}

    @handler("details")
    def _details(self, op: int) -> dict:
        return jsonable(self._analysis().details(int(op)))

    @handler("roofline")
    def _roofline(self) -> dict:
        return {"item": _charts.json_item(roofline_figure(self._analysis()))}

    def __repr__(self) -> str:
        if self.analysis is None:
            return f"<OpProfile {self.profile.source!r}: no ops>"
        o = self.analysis.overview()
        return (f"<OpProfile {self.profile.source!r} {o['device_type']} x{o['devices']} "
                f"ops={o['ops']} total={o['total_time_us'] / 1e3:.3f} ms "
                f"idle={o['idle_share']:.1%}>")


def _summary_of(analysis: OpProfileAnalysis) -> dict:
    overview = jsonable(analysis.overview())
    overview["suggestions"] = analysis.suggestions()
    overview["notes"] = list(analysis.notes)
    overview["has_peaks"] = analysis.device.has_peaks
    return overview


def _records(frame: pd.DataFrame, columns: list[str]) -> dict[str, list]:
    """Columnar JSON of a frame (one list per column), NaN as null."""
    out: dict[str, list] = {}
    for column in columns:
        values = frame[column].to_numpy() if column in frame else np.full(len(frame), None)
        out[column] = jsonable(values.tolist())
    return out


# ---- the roofline -----------------------------------------------------------------------------
def roofline_figure(analysis: OpProfileAnalysis) -> _charts.Figure:
    """Bokeh figure: each op at (FLOPs per HBM byte, achieved FLOP/s), sized by its time, under
    the device's roofline (min(peak FLOP/s, intensity x peak bandwidth)) when peaks are known."""
    field = _charts.field
    ops = analysis.ops
    placed = ops[(ops["flops"] > 0) & (ops["hbm_bytes"] > 0) & (ops["time_ps"] > 0)]
    placed = placed.sort_values("time_ps", ascending=False).head(ROOFLINE_OPS)
    device = analysis.device
    title = f"Roofline: {device.name}"
    if not device.has_peaks:
        title += " (no peak known: ops only, no roof)"
    fig = _charts.Figure(title=title, x_type="log", y_type="log", height=360,
                         x_label="arithmetic intensity (FLOP / byte)",
                         y_label="achieved FLOP/s", tools="pan,wheel_zoom,box_zoom,reset,save")
    categories = list(dict.fromkeys(placed["category"]))
    colors = {c: _charts.CATEGORY10[k % 10] for k, c in enumerate(categories)}
    share = placed["time_ps"] / max(float(ops["time_ps"].sum()), 1.0)
    source = _charts.source({
        "x": placed["arithmetic_intensity"].to_numpy(np.float64),
        "y": placed["flop_rate"].to_numpy(np.float64),
        "size": (6 + 40 * np.sqrt(share.to_numpy(np.float64))),
        "color": [colors[c] for c in placed["category"]],
        "name": placed["name"].astype(str).tolist(),
        "category": placed["category"].astype(str).tolist(),
        "time": [_time_text(t) for t in placed["time_us"]],
        "share": [f"{s:.1%}" for s in share],
        "bound": placed["bound_by"].astype(str).tolist(),
    })
    points = fig.glyph("Scatter", source, x=field("x"), y=field("y"), size=field("size"),
                       fill_color=field("color"), hatch_color=field("color"), fill_alpha=0.7,
                       hatch_alpha=0.7, line_alpha=0.7, line_color="#333", line_width=0.5,
                       legend_field="category")
    fig.add_tool(_charts.hover([points], [
        ("op", "@name"), ("category", "@category"), ("time", "@time (@share)"),
        ("intensity", "@x{0.00} FLOP/B"), ("rate", "@y{0.00 a}FLOP/s"), ("bound by", "@bound")]))
    if device.has_peaks:
        xs = placed["arithmetic_intensity"]
        lo = min(float(xs.min()) / 4 if len(xs) else 0.01, device.ridge_point / 100)
        hi = max(float(xs.max()) * 4 if len(xs) else 100.0, device.ridge_point * 100)
        grid = np.geomspace(lo, hi, 200)
        roof = _charts.source({"x": grid,
                               "y": np.minimum(device.peak_flops, grid * device.peak_bandwidth)})
        fig.glyph("Line", roof, x=field("x"), y=field("y"), line_width=2, line_color="#444",
                  legend_label="roofline")
        fig.add_layout(_charts.model("Span", location=device.ridge_point, dimension="height",
                                     line_dash="dashed", line_color="#888"))
        fig.add_layout(_charts.model("Label", x=device.ridge_point, y=device.peak_flops,
                                     text=" ridge point", text_font_size="10px",
                                     text_color="#666"))
    fig.legend_of().update(location="bottom_right", click_policy="hide",
                           label_text_font_size="10px")
    return fig


def _time_text(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f} s"
    if us >= 1e3:
        return f"{us / 1e3:.3f} ms"
    return f"{us:.3f} us"
