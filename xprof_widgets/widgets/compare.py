"""`xw.compare(before, after)`: two runs side by side, as a widget and as DataFrames.

The widget is the comparison's view (the summary in words; steps, ops and memory in tabs) over
two Trace Viewers, one per run, aligned on a chosen step (at first, the step whose time changed
most): their windows are linked with the
offset between the two runs' starts of that step, so panning or zooming one moves the other and
step k of each starts at the same x. The view asks for its report after it renders; the op
table for another grouping on request.

    cmp = xw.compare("logs/before", "logs/after")
    cmp                        # the widget
    cmp.summary()              # "Step time 41.2 -> 33.0 ms, -20%; input wait -7.9 ms. ..."
    cmp.ops(), cmp.steps(), cmp.memory(), cmp.buffers()
    cmp.trace_diff()           # two PyTorch traces: ops and kernels by name, as HTA's TraceDiff
    cmp.align(3)               # both traces on step 3 (at first: cmp.comparison.most_changed_step())
    cmp.rows()                 # the timelines' rows: which thread of before is drawn beside which of after

Both timelines draw the same rows in the same order (analysis/compare_rows.py): threads matched
by section and name, or by name stem where only their ids differ; a row one run lacks is drawn
empty on its side, named "... · only in before/after".
"""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets
import numpy as np
import pandas as pd
import traitlets

from ..analysis.compare import (
    FLOOR_US,
    GROUPINGS,
    MAIN_SPACE,
    PART_NAMES,
    THRESHOLD,
    Comparison,
    K,
)
from ..analysis.compare_rows import match_rows
from ..analysis.input_pipeline import STEP_PARTS
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, handler, jsonable
from ._table import columnar
from .compare_traces import MatchedTraceViewer
from .trace_viewer import TraceViewer

BEFORE_COLOR, AFTER_COLOR = "#4e79a7", "#f28e2b"
_STEP_PAD = 0.08
"""Room left on each side of the aligned step, as a share of its length."""


def compare(before: str | os.PathLike | Profile, after: str | os.PathLike | Profile, *,
            run_before: str | None = None, run_after: str | None = None,
            threshold: float = THRESHOLD, floor_us: float = FLOOR_US, k: float = K,
            trace_height: int = 360) -> Compare:
    """Compares two profiles (paths or opened `Profile`s; the same one twice is allowed).

    k: an op or step changed only when its change exceeds k standard errors of the runs' own
    spread (its occurrences within each run); floor_us: nor under this per occurrence;
    threshold: the share of its time under which a change is noise where no spread is known
    (an op that ran once). See `analysis/compare.py`.
    """
    return Compare(open_profile(before, run=run_before), open_profile(after, run=run_after),
                   threshold=threshold, floor_us=floor_us, k=k, trace_height=trace_height)


class CompareView(RequestWidget):
    """The report half of `Compare`: summary, steps, ops and memory (js/src/compare/)."""

    _bundle = "compare.js"
    title = traitlets.Dict().tag(sync=True)
    step = traitlets.Int(0, help="The step position both Trace Viewers are aligned on."
                         ).tag(sync=True)

    def __init__(self, comparison: Comparison, **kwargs: Any):
        super().__init__(title={"before": comparison.before.profile.source,
                                "after": comparison.after.profile.source}, **kwargs)
        self.comparison = comparison

    @handler("report")
    def _report(self) -> dict:
        c = self.comparison
        return jsonable({"summary": c.summary(), "steps": _section(lambda: _steps(c)),
                         "ops": _section(lambda: _trace_ops(c) if c.kineto else {
                             "rows": columnar(c.ops())}),
                         "memory": _section(lambda: _memory(c)),
                         "groupings": list(GROUPINGS), "threshold": c.threshold,
                         "floor_us": c.floor_us, "k": c.k})

    @handler("ops")
    def _ops(self, by: str = "op") -> dict:
        return {"rows": columnar(self.comparison.ops(by=by)), "by": by}


class Compare(ipywidgets.VBox):
    """Two runs compared: the report, then one Trace Viewer per run aligned on a step.

    The DataFrames are the analysis's (`analysis.compare.Comparison`): `steps()`,
    `step_breakdown()`, `ops(by=..., per_step=...)`, `kernels()`, `memory()`, `buffers(...)`,
    `trace_diff(...)` (PyTorch traces), `summary()`.
    """

    def __init__(self, before: Profile, after: Profile, *, threshold: float = THRESHOLD,
                 floor_us: float = FLOOR_US, k: float = K, trace_height: int = 360,
                 **kwargs: Any):
        super().__init__(**kwargs)
        self.comparison = Comparison(before, after, threshold, floor_us, k)
        self.view = CompareView(self.comparison)
        self._rows = match_rows(before, after)
        self.before = MatchedTraceViewer(before, self._rows, "before", height=trace_height)
        self.after = MatchedTraceViewer(after, self._rows, "after", height=trace_height)
        self.trace_label = ipywidgets.HTML()
        self._offset_us = 0.0
        self._linking = False
        self.before.observe(lambda change: self._follow(change, self.after, 1), names="window")
        self.after.observe(lambda change: self._follow(change, self.before, -1), names="window")
        self.view.observe(lambda change: self.align(change["new"]), names="step")
        traces = ipywidgets.VBox([self.trace_label,
                                  _labelled("before", before.source, self.before),
                                  _labelled("after", after.source, self.after)])
        traces.add_class("xw-cmp-traces")
        self.children = [self.view, traces]
        self.align(self.comparison.most_changed_step())

    # ---- the pandas face ----------------------------------------------------------------------
    def summary(self) -> str:
        return self.comparison.summary()

    def steps(self) -> pd.DataFrame:
        return self.comparison.steps()

    def step_breakdown(self) -> pd.DataFrame:
        return self.comparison.step_breakdown()

    def ops(self, by: str = "op", per_step: bool = False) -> pd.DataFrame:
        return self.comparison.ops(by=by, per_step=per_step)

    def kernels(self) -> pd.DataFrame:
        return self.comparison.kernels()

    def rows(self) -> pd.DataFrame:
        """The rows both timelines draw, top to bottom: which track of before is beside which
        of after and how they were matched (`analysis.compare_rows.match_rows`)."""
        return self._rows.copy()

    def trace_diff(self, device: str = "all", rank_before: int | list[int] | None = None,
                   rank_after: int | list[int] | None = None,
                   iteration_before: int | list[int] | None = None,
                   iteration_after: int | list[int] | None = None) -> pd.DataFrame:
        return self.comparison.trace_diff(device, rank_before, rank_after, iteration_before,
                                          iteration_after)

    def memory(self) -> pd.DataFrame:
        return self.comparison.memory()

    def buffers(self, module: str | None = None, memory_space: str | None = None
                ) -> pd.DataFrame:
        return self.comparison.buffers(module, memory_space)

    # ---- the two timelines --------------------------------------------------------------------
    def align(self, step: int) -> None:
        """Shows step position `step` in both Trace Viewers, starting at the same x, one span
        wide (the longer of the two steps, padded); later pans and zooms move both."""
        step = int(step)
        try:
            offset = self.comparison.step_offset_us(step)
            b0, b1 = self.comparison.step_span_us(step, "before")
            a0, a1 = self.comparison.step_span_us(step, "after")
        except ProfileError as exc:
            self.trace_label.value = _note(f"The traces are not aligned: {exc}".split("\n")[0])
            return
        if self.view.step != step:
            self.view.step = step  # calls back here; the second call does the work
            return
        span = max(b1 - b0, a1 - a0)
        pad = span * _STEP_PAD
        self._offset_us = offset
        self._linking = True
        try:
            self.before.window = (b0 - pad, b0 + span + pad)
            self.after.window = (b0 - pad + offset, b0 + span + pad + offset)
        finally:
            self._linking = False
        self.trace_label.value = _note(
            f"Both timelines show step {step} from its start ({offset / 1000:+.3f} ms later in "
            "after); pan or zoom either one and the other follows.")

    def _follow(self, change: dict, other: TraceViewer, sign: int) -> None:
        if self._linking:
            return
        start, end = change["new"]
        target = (start + sign * self._offset_us, end + sign * self._offset_us)
        if np.allclose(other.window, target, rtol=0, atol=1e-6 * (end - start)):
            return
        self._linking = True
        try:
            other.window = target
        finally:
            self._linking = False

    def __repr__(self) -> str:
        return (f"<Compare {self.comparison.before.profile.source!r} -> "
                f"{self.comparison.after.profile.source!r}>")


def _labelled(label: str, source: str, viewer: TraceViewer) -> ipywidgets.VBox:
    title = ipywidgets.HTML(f"<b>{label}</b>: <code>{html.escape(source)}</code>")
    return ipywidgets.VBox([title, viewer])


def _note(text: str) -> str:
    return f"<div style='margin:8px 0 2px'>{html.escape(text)}</div>"


def _section(build: Any) -> dict:
    """A report section, or its error in words (a run without steps still compares its ops)."""
    try:
        return build()
    except ProfileError as exc:
        return {"error": str(exc)}


def _steps(c: Comparison) -> dict:
    steps = c.steps()
    return {"rows": columnar(steps), "breakdown": columnar(c.step_breakdown()),
            "most_changed": c.most_changed_step(),
            "aligned": int(min(steps["step_before"].count(), steps["step_after"].count())),
            "chart": _charts.json_item(step_figure(steps))}


def _trace_ops(c: Comparison) -> dict:
    """Two PyTorch traces' ops and kernels, as HTA's trace diff counts them, and what was
    compared (which rank and profiler step of each run)."""
    return {"kind": "trace", "rows": columnar(c.trace_diff()), "scope": c.trace_scope()}


def _memory(c: Comparison) -> dict:
    out: dict[str, Any] = {"rows": columnar(c.memory()), "module": c.default_module,
                           "memory_space": c.space_name(MAIN_SPACE)}
    if c.default_module is not None:
        out["buffers"] = _section(lambda: {"rows": columnar(c.buffers())})
    return out


def step_figure(steps: pd.DataFrame) -> _charts.Figure:
    """Each step's time in both runs, side by side; the hover gives the breakdown."""
    x = steps["step"].to_numpy(np.float64)
    # The hover lists the step breakdown's parts that hold time in either run, by their names.
    parts = [column.removesuffix("_us") for column in STEP_PARTS
             if any((steps[f"{column.removesuffix('_us')}_{side}_us"].fillna(0) > 0).any()
                    for side in ("before", "after"))]
    fig = _charts.Figure(title="Step time, before and after", height=260,
                         x_label="step (position in the run)", y_label="ms",
                         tools="xpan,xwheel_zoom,box_zoom,reset,save",
                         y_range=_charts.model("DataRange1d", start=0))
    for side, color, shift in (("before", BEFORE_COLOR, -0.18), ("after", AFTER_COLOR, 0.18)):
        number = steps[f"step_{side}"]
        data = {"x": x + shift, "step": number.astype(object).where(number.notna(), "").tolist(),
                **{part: steps[f"{part}_{side}_us"].to_numpy(np.float64) / 1000
                   for part in ("duration", *parts)}}
        bars = fig.glyph("VBar", _charts.source(data), x=_charts.field("x"), width=0.34,
                         top=_charts.field("duration"), fill_color=color, hatch_color=color,
                         line_color=None, legend_label=side)
        fig.add_tool(_charts.hover([bars], [
            ("run", side), ("step", "@step"), ("step time", "@duration{0.000} ms"),
            *((PART_NAMES[f"{part}_us"].lower(), f"@{part}{{0.000}} ms") for part in parts)]))
    fig.x_grid["attributes"]["grid_line_color"] = None
    fig.legend_of().update(orientation="horizontal", border_line_color=None)
    fig.place_legend_above()
    return fig
