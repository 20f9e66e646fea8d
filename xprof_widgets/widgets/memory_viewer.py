"""`MemoryViewer`: XProf's memory viewer in a notebook cell.

The widget syncs the choice (`module`, `memory_space`) and the lists the view's dropdowns offer;
the view asks for the chart templates once and for the chosen module's figures on every change:
the summary, the memory curve (decimated to a few thousand points, the peak kept exact) and the
buffers live at the peak (the largest few hundred per chart). Analyses are cached per (module,
memory space), so switching back is instant.

    mv = xw.MemoryViewer("/logs/run")
    mv.summary                       # peak, its split by allocation type, padding
    mv.to_dataframe()                # buffers live at the peak
    mv.module = "jit_train_step"     # the view redraws
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.memory import MemoryAnalysis, analyze_memory, default_module, memory_spaces
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.hlo import HloModule
from ..profile.model import Profile
from ..profile.schema import MEMORY_SPACES
from . import _charts
from ._base import RequestWidget, checked_choice, handler, jsonable, profile_title

MAX_BUCKETS = 2000
"""The memory curve keeps the lowest and highest point of each of this many buckets (padded
and unpadded), so it stays under ~8000 points whatever the program's length."""
MAX_BARS = 256
"""Buffers each bar chart shows: the largest ones (by size, or by padding for its chart)."""
_CACHED_ANALYSES = 4
_UNITS = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)]
_SHAPE_INDEX = re.compile(r"\{[\d,]*\}$")
_NO_HLO = (
    "{source} carries no HLO protos, so there is no memory to show: the Memory Viewer reads "
    "XLA's buffer assignment from the HLO protos that jax.profiler.trace (and TensorFlow's "
    "profiler) write into the profile's /host:metadata plane on every backend. Profile an XLA "
    "program (JAX, TensorFlow, PyTorch/XLA) with its profiler and open the resulting "
    ".xplane.pb; traces from PyTorch's own profiler (.pt.trace.json) and other Chrome traces "
    "never carry them.")


class MemoryViewer(RequestWidget):
    """Memory use of one XLA module: peak, memory over program order, buffers at the peak.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        module: the HLO module, by name, program id or `"name(program_id)"`; default: the
            training step if there is one (a name with a part starting with `train` or ending
            with `step`), else the module with the largest peak (see docs/memory_viewer.md).
        memory_space: HBM, VMEM, SMEM, CMEM, SFlag, SparseCore or Host (any case). A module
            without HBM buffers shows its first space instead; another space the module lacks
            raises ProfileError.
        run, host: which run and host(s) to open (default: the newest run, every host).
    """

    _bundle = "memory_viewer.js"

    module = traitlets.Any("", help="The module shown, as 'name(program_id)'; set it to a name, "
                           "program id or label.").tag(sync=True)
    memory_space = traitlets.Unicode("HBM", help="The memory space shown (one the module has)."
                                     ).tag(sync=True)
    link = traitlets.Dict(help="Set by the view's 'show in Trace Viewer': {'tool': 'trace', "
                          "'op': instruction name}; the Profiler suite routes it.").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    _modules = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _spaces = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, module: str | int | None = None,
                 memory_space: str = "HBM", *, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        self.profile = profile
        table = profile.hlo_modules.drop_duplicates("program_id")
        self._ids = [int(p) for p in table["program_id"]]
        self._names = dict(zip(self._ids, table["name"], strict=True))
        self._hlo: dict[int, HloModule] = {}
        self._space_lists: dict[int, list[str]] = {}
        self._analyses: OrderedDict[tuple[int, str], MemoryAnalysis | ProfileError] = OrderedDict()
        space = _space_name(memory_space)
        state: dict[str, Any] = {"title": profile_title(profile), "memory_space": space}
        if not self._ids:
            state["_error"] = _NO_HLO.format(source=profile.source)
        else:
            pid = self._default() if module is None else self._resolve(module)
            spaces = self._spaces_of(pid)
            if spaces and space not in spaces:
                if space != "HBM":
                    raise ProfileError(f"{profile.source}: module {self._label(pid)} has no "
                                       f"buffers in {space}; it has {', '.join(spaces)}.")
                state["memory_space"] = spaces[0]
            state.update(module=self._label(pid), _spaces=spaces,
                         _modules=[self._label(p) for p in self._ids])
        super().__init__(**state, **kwargs)

    # ---- modules ------------------------------------------------------------------------------
    def _label(self, pid: int) -> str:
        return f"{self._names[pid]}({pid})"

    def _hlo_module(self, pid: int) -> HloModule:
        if pid not in self._hlo:
            self._hlo[pid] = HloModule(self.profile.hlo_proto_bytes(pid), program_id=pid,
                                       where=self.profile.source)
        return self._hlo[pid]

    def _spaces_of(self, pid: int) -> list[str]:
        if pid not in self._space_lists:
            self._space_lists[pid] = memory_spaces(self._hlo_module(pid))
        return self._space_lists[pid]

    def _default(self) -> int:
        try:
            return int(default_module({pid: self._hlo_module(pid) for pid in self._ids}))
        except ProfileError:  # no module has buffer assignment: the first one says so
            return self._ids[0]

    def _resolve(self, key: Any) -> int:
        """Program id of a module given by label, program id or name (a repeated name: the
        one `default_module` prefers among them)."""
        if isinstance(key, (int, np.integer)) and int(key) in self._names:
            return int(key)
        if isinstance(key, str):
            text = key.strip()
            if text.isdigit() and int(text) in self._names:
                return int(text)
            for pid in self._ids:
                if text == self._label(pid):
                    return pid
            same = [pid for pid in self._ids if self._names[pid] == text]
            if len(same) == 1:
                return same[0]
            if same:
                try:
                    return int(default_module({pid: self._hlo_module(pid) for pid in same}))
                except ProfileError:
                    return same[0]
        known = ", ".join(self._label(pid) for pid in self._ids) or "none"
        raise ProfileError(f"{self.profile.source}: no HLO module {key!r}; the profile has: "
                           f"{known}.")

    @traitlets.validate("module")
    def _check_module(self, proposal: dict) -> str:
        try:
            return self._label(self._resolve(proposal["value"]))
        except ProfileError as exc:
            raise traitlets.TraitError(str(exc)) from None

    @traitlets.validate("memory_space")
    def _check_space(self, proposal: dict) -> str:
        space = _space_name(proposal["value"])
        return checked_choice(space, self._spaces or None,
                              f"module {self.module} has no buffers in {space}; it has ")

    @traitlets.observe("module")
    def _module_changed(self, change: dict) -> None:
        if not self._ids:
            return
        spaces = self._spaces_of(self._resolve(change["new"]))
        with self.hold_sync():
            self._spaces = spaces
            if spaces and self.memory_space not in spaces:
                self.memory_space = "HBM" if "HBM" in spaces else spaces[0]

    @property
    def program_id(self) -> int | None:
        """Program id of the module shown (None when the profile has no HLO protos)."""
        return self._resolve(self.module) if self._ids else None

    @property
    def memory_spaces(self) -> list[str]:
        """Memory spaces the module shown has buffers in."""
        return list(self._spaces)

    # ---- the analysis and its pandas face -----------------------------------------------------
    def _analysis(self) -> MemoryAnalysis | ProfileError:
        """The analysis of the current choice, or the error that explains why there is none."""
        if self._error:
            return ProfileError(self._error)
        pid = self._resolve(self.module)
        key = (pid, self.memory_space)
        if key in self._analyses:
            self._analyses.move_to_end(key)
            return self._analyses[key]
        try:
            result: MemoryAnalysis | ProfileError = analyze_memory(
                self._hlo_module(pid), self.memory_space)
        except ProfileError as exc:
            result = exc
        self._analyses[key] = result
        while len(self._analyses) > _CACHED_ANALYSES:
            self._analyses.popitem(last=False)
        return result

    @property
    def analysis(self) -> MemoryAnalysis:
        """The `MemoryAnalysis` of the module and memory space shown; raises ProfileError when
        there is none (no HLO protos, no buffer assignment)."""
        result = self._analysis()
        if isinstance(result, ProfileError):
            raise result
        return result

    @property
    def summary(self) -> dict[str, Any]:
        """Peak with and without padding, its split (parameters, temporaries, outputs,
        constants), padding, and the instruction at the peak; see MemoryAnalysis.summary."""
        return dict(self.analysis.summary)

    def to_dataframe(self, order: str = "program") -> pd.DataFrame:
        """Buffers live at the peak, one row each (buffers under 16 KiB lumped into one):
        name, size_bytes, size_mib, unpadded_bytes, padding_bytes, expansion, shape, op_name,
        allocation_type, source, start, end (program order), logical_buffer_id, opcode.
        order: "program", "size" or "padding"."""
        return self.analysis.buffers(order)

    def timeline(self) -> pd.DataFrame:
        """Allocated memory after each heap-simulator step, padded and unpadded, with the
        instruction of the step: program_order, instruction, event, allocated_bytes,
        allocated_unpadded_bytes, allocated_mib, allocated_unpadded_mib."""
        return self.analysis.timeline()

    # ---- requests from the view ---------------------------------------------------------------
    @handler("charts")
    def _charts(self) -> dict:
        return chart_templates()

    @handler("view")
    def _view(self) -> tuple[dict, list]:
        """Everything the view draws for the current module and memory space."""
        result = self._analysis()
        head = {"module": self.module, "memory_space": self.memory_space}
        if isinstance(result, ProfileError):
            return {**head, "error": str(result)}, []
        content, buffers = view_data(result)
        return {**head, **content}, buffers

    def __repr__(self) -> str:
        if self._error:
            return f"<MemoryViewer {self.profile.source!r}: no HLO protos>"
        result = self._analysis()
        if isinstance(result, ProfileError):
            return f"<MemoryViewer {self.module} {self.memory_space}: {result}>"
        s = result.summary
        return (f"<MemoryViewer {self.module} {self.memory_space}: peak {s['peak_mib']:.2f} MiB "
                f"({s['peak_unpadded_mib']:.2f} MiB unpadded)>")


def _space_name(space: Any) -> str:
    """The canonical spelling of a memory space name (HBM, VMEM, ...)."""
    names = {name.lower(): name for name in MEMORY_SPACES.values()}
    key = str(space).strip().lower()
    if key not in names:
        raise ProfileError(f"unknown memory space {space!r}; expected one of "
                           f"{', '.join(MEMORY_SPACES.values())}")
    return names[key]


# ---- what the view draws ------------------------------------------------------------------------
def unit_of(peak_bytes: int) -> tuple[str, int]:
    """The binary unit the charts use: the largest that keeps the peak at 1 or more."""
    name, scale = _UNITS[0]
    for unit, size in _UNITS:
        if peak_bytes >= size:
            name, scale = unit, size
    return name, scale


def decimate(padded: np.ndarray, unpadded: np.ndarray, keep: int | None,
             buckets: int = MAX_BUCKETS) -> np.ndarray:
    """Steps to draw: all of them when few; else the first, the last, `keep` (the peak) and,
    in each of `buckets` equal runs of steps, those where either curve is lowest or highest."""
    n = len(padded)
    if n <= 2 * buckets:
        return np.arange(n)
    width = -(-n // buckets)
    whole = n // width * width
    starts = np.arange(0, whole, width)
    picks = [np.array([0, n - 1] + ([keep] if keep is not None else []))]
    for curve in (padded, unpadded):
        runs = curve[:whole].reshape(-1, width)
        picks += [starts + runs.argmin(1), starts + runs.argmax(1)]
        if whole < n:
            tail = curve[whole:]
            picks.append(whole + np.array([tail.argmin(), tail.argmax()]))
    return np.unique(np.concatenate(picks))


def _bar_rows(buffers: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[int]]]:
    """The rows the bar charts show, and each chart's rows in its order: at most MAX_BARS each,
    the largest by size (shown in program order, or by size) or by padding."""
    n = len(buffers)
    program = np.arange(n)
    by_size = np.argsort(-buffers["size_bytes"].to_numpy(), kind="stable")
    by_padding = np.lexsort((program, -buffers["padding_bytes"].to_numpy()))
    orders = {"program": np.sort(by_size[:MAX_BARS]), "size": by_size[:MAX_BARS],
              "padding": by_padding[:MAX_BARS]}
    used = np.unique(np.concatenate(list(orders.values())))
    position = np.full(n, -1)
    position[used] = np.arange(len(used))
    return (buffers.iloc[used].reset_index(drop=True),
            {key: position[rows].tolist() for key, rows in orders.items()})


def _columns(frame: pd.DataFrame, scale: int, padding_scale: int) -> dict[str, list]:
    """The bar rows as columns for the view: sizes in the chart units and in bytes."""
    def ints(column: str) -> list:
        return [None if pd.isna(v) else int(v) for v in frame[column]]

    names = frame["name"].tolist()
    small = frame["logical_buffer_id"].to_numpy() < 0
    return jsonable({
        "name": names,
        "instruction": [None if s else _SHAPE_INDEX.sub("", n) for n, s in
                        zip(names, small, strict=True)],
        "size": (frame["size_bytes"].to_numpy() / scale).tolist(),
        "unpadded": (frame["unpadded_bytes"].to_numpy() / scale).tolist(),
        "padding": (frame["padding_bytes"].to_numpy() / padding_scale).tolist(),
        "size_bytes": frame["size_bytes"].tolist(),
        "unpadded_bytes": frame["unpadded_bytes"].tolist(),
        "padding_bytes": frame["padding_bytes"].tolist(),
        "expansion": frame["expansion"].astype(float).tolist(),
        "shape": frame["shape"].tolist(),
        "op_name": frame["op_name"].tolist(),
        "allocation_type": frame["allocation_type"].tolist(),
        "source": frame["source"].tolist(),
        "opcode": frame["opcode"].tolist(),
        "start": ints("start"),
        "end": ints("end"),
    })


def view_data(analysis: MemoryAnalysis) -> tuple[dict, list[np.ndarray]]:
    """The view's figures of one analysis: JSON content, and the memory curve as binary buffers
    (program order, padded and unpadded in the chart unit as float64; int32 codes into
    `curve.names` for each point's instruction)."""
    s = analysis.summary
    unit, scale = unit_of(max(s["peak_bytes"], 1))
    padded, unpadded = analysis.curve()
    steps = decimate(padded, unpadded, s["peak_program_order"], MAX_BUCKETS)
    names, codes = np.unique(np.asarray(analysis.instructions_at(steps), dtype=object),
                             return_inverse=True) if len(steps) else (np.array([]), steps)
    buffers = analysis.buffers()
    rows, orders = _bar_rows(buffers)
    padding_unit, padding_scale = unit_of(int(buffers["padding_bytes"].to_numpy().max(initial=1)))
    content = {
        "summary": jsonable({**s, "program_id": str(s["program_id"])}),
        "unit": unit, "scale": scale,
        "curve": {"steps": len(padded), "points": len(steps), "names": names.tolist()},
        "bars": {"total": len(buffers), "rows": _columns(rows, scale, padding_scale),
                 "orders": orders, "padded": bool((buffers["padding_bytes"] > 0).any()),
                 "padding_unit": padding_unit},
    }
    curve = [steps.astype(np.float64), padded[steps] / scale, unpadded[steps] / scale,
             codes.reshape(-1).astype(np.int32)]
    return content, curve


# ---- chart templates ----------------------------------------------------------------------------
CURVE_COLOR, UNPADDED_COLOR, PEAK_COLOR = "#263238", "#9ecae1", "#d62728"
BAR_CHARTS = {  # key: (title, x axis)
    "program": ("Buffers at the peak, in program order", "buffers, in the order they became live"),
    "size": ("Buffers at the peak, by size", "buffers, largest first"),
    "padding": ("Buffers at the peak, by padding overhead", "buffers, most padding first"),
}


@lru_cache(maxsize=1)
def chart_templates() -> dict:
    """Bokeh JSON items of the four charts with empty data sources; the view fills them for
    each module (named models: curve, lifetime, lifetime_span, peak, peak_label, y_axis,
    curve_hover; bars, bars_y_axis).
    Built once per process: a switch sends data only."""
    items = {"curve": _charts.json_item(curve_figure())}
    for key, (title, x_label) in BAR_CHARTS.items():
        items[key] = _charts.json_item(bars_figure(title, x_label))
    return items


def curve_figure() -> _charts.Figure:
    """Memory allocation size vs program order: padded and unpadded, the peak marked, and a
    hovered buffer's lifetime as a bar from its allocation to its free, in its type's colour."""
    model, field = _charts.model, _charts.field
    source = _charts.source({"x": [], "padded": [], "unpadded": [], "instruction": []},
                            name="curve")
    lifetime = _charts.source({"left": [], "right": [], "top": [], "color": []},
                              name="lifetime")
    fig = _charts.Figure(title="Memory allocation size vs program order", height=300,
                         x_label="program order (heap-simulator step)",
                         tools="xpan,xwheel_zoom,box_zoom,reset,save", active_scroll=None,
                         y_range=model("DataRange1d", start=0))
    fig.y_axis["attributes"]["name"] = "y_axis"
    # the lifetime's span over the whole height too: a small buffer's bar may be a sliver
    fig.add_layout(model("BoxAnnotation", left=0, right=0, fill_alpha=0.08, line_alpha=0.5,
                         line_dash="dotted", visible=False, name="lifetime_span"))
    fig.glyph("Quad", lifetime, left=field("left"), right=field("right"), bottom=0,
              top=field("top"), fill_color=field("color"), hatch_color=field("color"),
              fill_alpha=0.3, line_color=field("color"))
    # the unpadded curve is wide and light beneath the padded one: where they agree, both show
    fig.glyph("Line", source, x=field("x"), y=field("unpadded"), line_color=UNPADDED_COLOR,
              line_width=5, line_alpha=0.8, legend_label="without padding")
    padded = fig.glyph("Line", source, x=field("x"), y=field("padded"), line_color=CURVE_COLOR,
                       line_width=1.5, legend_label="with padding")
    fig.add_layout(model("Span", location=0, dimension="height", line_color=PEAK_COLOR,
                         line_width=1.5, line_dash="dotted", name="peak"))
    # at the foot of the peak line: the curve is at its highest there, so the foot is free
    fig.add_layout(model("Label", x=0, y=0, text="", name="peak_label", text_font_size="11px",
                         text_color=PEAK_COLOR, x_offset=4, y_offset=4,
                         background_fill_color="white", background_fill_alpha=0.8))
    fig.add_tool(_charts.hover([padded], [
        ("step", "@x{0}"), ("instruction", "@instruction"), ("allocated", "@padded{0.000}"),
        ("without padding", "@unpadded{0.000}")], mode="vline", line_policy="nearest",
        name="curve_hover"))
    fig.legend_of().update(orientation="horizontal", label_text_font_size="10px",
                           border_line_color=None, padding=2, margin=2)
    fig.place_legend_above()
    return fig


def bars_figure(title: str, x_label: str) -> _charts.Figure:
    """Buffers as bars of their size, the padding part hatched (the padding chart gets only
    that part); hover and tap are read by the view (card and lifetime), so no tooltips."""
    field = _charts.field
    source = _charts.source({"x": [], "size": [], "unpadded": [], "color": [], "row": []},
                            name="bars")
    fig = _charts.Figure(title=title, height=170, toolbar_location=None, tools="tap",
                         x_label=x_label, y_range=_charts.model("DataRange1d", start=0))
    fig.y_axis["attributes"]["name"] = "bars_y_axis"
    solid = fig.glyph("VBar", source, x=field("x"), top=field("unpadded"), width=0.8,
                      fill_color=field("color"), hatch_color=field("color"), line_color=None,
                      nonselection={"fill_alpha": 0.35},
                      hover={"fill_color": field("color"), "line_color": "#000"})
    padding = fig.glyph("VBar", source, x=field("x"), bottom=field("unpadded"),
                        top=field("size"), width=0.8, fill_color=field("color"),
                        fill_alpha=0.35, hatch_pattern="/", hatch_color=field("color"),
                        hatch_alpha=0.9, line_color=None,
                        nonselection={"fill_alpha": 0.15, "hatch_alpha": 0.3},
                        hover={"fill_color": field("color"), "fill_alpha": 0.35,
                               "line_color": "#000"})
    fig.add_tool(_charts.hover([solid, padding], None, mode="vline"))
    fig.x_grid["attributes"]["grid_line_color"] = None
    return fig
