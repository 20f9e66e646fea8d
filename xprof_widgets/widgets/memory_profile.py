"""`MemoryProfile`: XProf's memory profile (the allocators' view) in a notebook cell.

The same widget reads a PyTorch profiler trace's `[memory]` events (`profile_memory=True`):
one allocator per device, allocated and reserved bytes over time, each allocation live at the
peak, and memory per op as PyTorch's TensorBoard plugin's Memory View counts it
(analysis/kineto/memory.py); the view then labels its series and tables for them.

The widget syncs the choice (`host`, `memory_id`) and the allocators each host has; the view
asks for the chart template once and for the chosen allocator's figures on every change: the
summary, the timeline (stack, heap and free memory, fragmentation; reduced to a few thousand
snapshots as XProf reduces its timeline) and the breakdown of the allocations live at the peak.
Clicking the timeline asks the suite to show that moment in the Trace Viewer.

    mp = xw.MemoryProfile("/logs/run")
    mp.summary()                     # one row per host and allocator
    mp.timeline("GPU_0_bfc")         # every snapshot of one allocator
    mp.breakdown()                   # the allocations live at the peak, as the table shows them
    mp.memory_by_op()                # a PyTorch trace's: allocations and frees per op
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.kineto.memory import DeviceMemory
from ..analysis.memory_profile import (
    AllocatorMemory,
    MemoryProfileAnalysis,
    analyze_memory_profile,
)
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, checked_choice, handler, jsonable, profile_title
from ._table import CsvExport, columnar
from .memory_viewer import unit_of

VIEW_POINTS = 4000
"""Snapshots the view's timeline keeps (XProf's max box filter; XProf itself keeps 1,000)."""
FREE_HIDDEN_ABOVE = 10
"""The free-memory area starts hidden when capacity exceeds the peak this many times (a CPU
allocator's free memory is the machine's RAM, which would flatten the rest)."""
_TEXT_COLUMNS = ("activity", "op_name", "region_type", "data_type", "shape")
_KINETO_FLOATS = ("reserved_bytes", "address")
_KINETO_TEXTS = ("cpu_op", "thread")
"""A Kineto device's snapshot columns sent after the shared ones."""
_NO_DATA = (
    "{source} holds no allocator events, so there is no memory profile: the memory profile "
    "reads the MemoryAllocation / MemoryDeallocation events that TensorFlow's allocators (and "
    "the TPU runtime) write on /host:CPU, or the [memory] events of a PyTorch profiler trace "
    "recorded with profile_memory=True. JAX on CPU and GPU writes none; for XLA programs the "
    "Memory Viewer shows the compiler's buffer assignment instead.")


class MemoryProfile(RequestWidget, CsvExport):
    """Memory held by each allocator over the profile: stack, heap, free, fragmentation, and
    what was live at the peak.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        memory_id: the allocator shown (`GPU_0_bfc`, `mklcpu`, a TPU's index; a PyTorch
            trace's device, `cuda:0`, `cpu`); default: the first of the host's, in XProf's
            order (a PyTorch trace's accelerators first).
        host: the host shown (default: the first with allocator events); every host of the
            run is opened, and the view's picker switches between them.
        run: which run to open (default: the newest).
    """

    _bundle = "memory_profile.js"

    host = traitlets.Unicode("", help="The host shown.").tag(sync=True)
    memory_id = traitlets.Unicode("", help="The allocator shown (a memory id of the host)."
                                  ).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    _choices = traitlets.Dict(help="Memory ids per host.").tag(sync=True)
    _kind = traitlets.Unicode("allocator", help="'allocator' (XProf's allocator events) or "
                              "'kineto' (a PyTorch trace's [memory] events).").tag(sync=True)
    _error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, memory_id: str | None = None,
                 *, host: str | None = None, run: str | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run)
        self.profile = profile
        self.analysis: MemoryProfileAnalysis = analyze_memory_profile(profile)
        choices: dict[str, list[str]] = {}
        for h, m in self.analysis.allocators:
            choices.setdefault(h, []).append(m)
        state: dict[str, Any] = {"title": profile_title(profile), "_choices": choices,
                                 "_kind": self.analysis.kind}
        if not choices:
            state["_error"] = _NO_DATA.format(source=profile.source)
        else:
            chosen = self.analysis.allocator(memory_id, host)
            state.update(host=chosen.host, memory_id=chosen.memory_id)
        super().__init__(**state, **kwargs)

    @traitlets.validate("host")
    def _check_host(self, proposal: dict) -> str:
        host = proposal["value"]
        return checked_choice(host, list(self._choices) if self._choices else None,
                              f"no allocator events on host {host!r}; hosts with them: ")

    @traitlets.validate("memory_id")
    def _check_memory_id(self, proposal: dict) -> str:
        memory_id = str(proposal["value"])
        return checked_choice(memory_id, self._choices.get(self.host, []) if self._choices
                              else None, f"host {self.host} has no allocator {memory_id!r}; it has ")

    @traitlets.observe("host")
    def _host_changed(self, change: dict) -> None:
        ids = self._choices.get(change["new"], [])
        if ids and self.memory_id not in ids:
            self.memory_id = ids[0]

    # ---- the pandas face ----------------------------------------------------------------------
    def allocator(self, memory_id: str | None = None, host: str | None = None) -> AllocatorMemory:
        """One allocator's analysis (default: the one shown); raises ProfileError without any."""
        if self._error:
            raise ProfileError(self._error)
        if memory_id is None and host is None:
            memory_id, host = self.memory_id, self.host
        return self.analysis.allocator(memory_id, host)

    def summary(self) -> pd.DataFrame:
        """One row per host and allocator: host, memory_id, num_allocs, num_deallocs,
        capacity_bytes, peak_bytes (stack + heap), peak_heap_bytes, peak_stack_bytes,
        peak_free_bytes, peak_fragmentation, peak_time_us, peak_step, lifetime_peak_bytes; a
        PyTorch trace's also peak_reserved_bytes, max_reserved_bytes (None where the trace
        does not record reserved bytes, as capacity_bytes and peak_free_bytes then),
        live_allocations, peak_op (the op that allocated at the peak) and pairing (how frees
        were paired with allocations: "address", or "size" in traces without addresses)."""
        return self.analysis.summary()

    def timeline(self, memory_id: str | None = None, host: str | None = None,
                 max_points: int | None = None) -> pd.DataFrame:
        """Every snapshot of an allocator in time order (time_us, activity, stack, heap and free
        bytes, fragmentation, sizes, address, op_name, step, region_type, data_type, shape,
        event; a PyTorch trace's also reserved_bytes, cpu_op, thread, ev_idx); `max_points`
        reduces them as XProf does (the largest heap + stack per window)."""
        return self.allocator(memory_id, host).timeline(max_points)

    def breakdown(self, memory_id: str | None = None, host: str | None = None) -> pd.DataFrame:
        """The allocations live at an allocator's peak: op_name, allocation_bytes,
        requested_bytes, occurrences, region_type, data_type, shape (largest first); on a
        PyTorch trace one row per allocation: op_name, allocation_bytes, requested_bytes,
        occurrences, address, allocated_us, step, thread, event."""
        return self.allocator(memory_id, host).breakdown()

    def memory_by_op(self, memory_id: str | None = None, host: str | None = None
                     ) -> pd.DataFrame:
        """A PyTorch trace's device: per op, the TensorBoard plugin's Memory View (op_name,
        calls, allocation_count, allocation_bytes, free_count, free_bytes, increase_bytes, and
        the same of the op itself, self_*), largest self increase first."""
        memory = self.allocator(memory_id, host)
        if not isinstance(memory, DeviceMemory):
            raise ProfileError(f"{self.profile.source}: memory per op is read from a PyTorch "
                               "trace's [memory] events, which this profile does not have "
                               "(its allocator events name one op per allocation: see "
                               "breakdown())")
        return memory.ops

    def to_dataframe(self) -> pd.DataFrame:
        """The breakdown the view shows (the chosen allocator's)."""
        return self.breakdown()

    # ---- requests from the view ---------------------------------------------------------------
    @handler("charts")
    def _charts(self) -> dict:
        return chart_template(self.analysis.kind)

    @handler("view")
    def _view(self) -> tuple[dict, list]:
        head = {"host": self.host, "memory_id": self.memory_id}
        content, buffers = view_data(self.allocator())
        return {**head, **content}, buffers

    def __repr__(self) -> str:
        if self._error:
            return f"<MemoryProfile {self.profile.source!r}: no allocator events>"
        s = self.allocator().summary()
        return (f"<MemoryProfile {self.host} {self.memory_id}: peak {s['peak_bytes'] / 2**20:.2f}"
                f" MiB at {s['peak_time_us'] / 1000:.3f} ms>")


# ---- what the view draws ------------------------------------------------------------------------
def view_data(memory: AllocatorMemory) -> tuple[dict, list[np.ndarray]]:
    """One allocator's figures: JSON content (summary, unit, the text columns' names, the
    breakdown; a Kineto device's memory per op, and whether its trace records no reserved
    bytes) and the timeline as binary buffers (float64: time_us, stack, heap, free in the
    chart unit, fragmentation %, requested and allocation bytes; int32: step, event, and codes
    into the text columns' names; a Kineto device's then float64 reserved (chart unit) and
    address, and codes of cpu_op and thread, named in `timeline.extra`)."""
    summary = memory.summary()
    unit, scale = unit_of(max(summary["peak_bytes"], 1))
    points = memory.timeline(VIEW_POINTS)
    kineto = "reserved_bytes" in points.columns
    text_columns = _TEXT_COLUMNS + (_KINETO_TEXTS if kineto else ())
    texts, codes = {}, []
    for column in text_columns:
        names, code = np.unique(points[column].to_numpy(dtype=object).astype(str),
                                return_inverse=True)
        texts[column] = names.tolist()
        codes.append(code.reshape(-1).astype(np.int32))
    table = memory.breakdown()
    capacity = summary["capacity_bytes"] or 0  # None: a PyTorch trace without reserved bytes
    unrecorded = kineto and bool(points["reserved_bytes"].isna().all())
    timeline = {"points": len(points), "snapshots": len(memory.snapshots), "texts": texts}
    if kineto:
        timeline["extra"] = {"floats": list(_KINETO_FLOATS), "texts": list(_KINETO_TEXTS)}
    content = {
        "kind": "kineto" if kineto else "allocator",
        "summary": jsonable(summary), "unit": unit, "scale": scale,
        "free_hidden": capacity > FREE_HIDDEN_ABOVE * max(summary["peak_bytes"], 1),
        "reserved_unknown": unrecorded,
        "timeline": timeline, "breakdown": columnar(table),
    }
    if isinstance(memory, DeviceMemory):
        content["ops"] = columnar(memory.ops)
    floats = [points["time_us"].to_numpy(np.float64)]
    for column in ("stack_reserved_bytes", "heap_allocated_bytes", "free_memory_bytes"):
        # unknown free bytes (no Total Reserved) draw as none; the card says unknown
        floats.append(np.nan_to_num(points[column].to_numpy(np.float64) / scale))
    floats.append(points["fragmentation"].to_numpy(np.float64) * 100)
    floats += [points["requested_bytes"].to_numpy(np.float64),
               points["allocation_bytes"].to_numpy(np.float64)]
    ints = [points["step"].to_numpy(np.int32), points["event"].to_numpy(np.int32)]
    if not kineto:
        return content, floats + ints + codes
    extra = [points["reserved_bytes"].to_numpy(np.float64) / scale,
             points["address"].to_numpy(np.float64)]
    shared = len(_TEXT_COLUMNS)
    return content, floats + ints + codes[:shared] + extra + codes[shared:]


# ---- the chart template ---------------------------------------------------------------------------
STACK_COLOR, HEAP_COLOR, FREE_COLOR, FRAGMENTATION_COLOR = "#d62728", "#ff7f0e", "#2ca02c", "#555"
"""XProf's timeline colours: stack red, heap orange, free green."""


@lru_cache(maxsize=2)
def chart_template(kind: str = "allocator") -> dict:
    """The timeline's Bokeh JSON item with a placeholder data source (`timeline`): stack, heap and
    free memory stacked (steps: a snapshot holds until the next), fragmentation on a second
    axis, the peak marked; named models the view sets: timeline, x_axis, y_axis, peak,
    peak_label, free_area, hover. For `kind` "kineto" (a PyTorch trace's device): allocated,
    and reserved but not allocated, stacked; no stack and no fragmentation, which it lacks."""
    return _charts.json_item(timeline_figure(kind))


def timeline_figure(kind: str = "allocator") -> _charts.Figure:
    model, field, stack = _charts.model, _charts.field, _charts.stack
    # one placeholder point: BokehJS 3.9 loops forever laying out a VAreaStep without data
    source = _charts.source({k: [0.0] for k in ("x", "stack", "heap", "free", "in_use",
                                                "fragmentation", "requested", "allocated")}
                            | {k: [""] for k in ("activity", "op", "step", "region", "dtype",
                                                 "shape")}, name="timeline")
    fig = _charts.Figure(title="Memory timeline", height=320, x_label="time (ms)",
                         tools="xpan,xwheel_zoom,box_zoom,reset,save", active_scroll=None,
                         y_range=model("DataRange1d", start=0, only_visible=True))
    fig.y_axis["attributes"]["name"] = "y_axis"
    fig.x_axis["attributes"].update(name="x_axis", formatter=model("BasicTickFormatter",
                                                                   use_scientific=False))
    kineto = kind == "kineto"
    if not kineto:
        root = fig.root["attributes"]
        root["extra_y_ranges"] = {"type": "map", "entries": [
            ["fragmentation", model("Range1d", start=0, end=100)]]}
        root["right"] = [model("LinearAxis", y_range_name="fragmentation",
                               axis_label="fragmentation (%)")]
    areas = [(_charts.value(0), field("heap"), HEAP_COLOR, "allocated", None),
             (field("heap"), stack("heap", "free"), FREE_COLOR, "reserved, not allocated",
              "free_area")] if kineto else [
        (_charts.value(0), field("stack"), STACK_COLOR, "stack (reserved)", None),
        (field("stack"), stack("stack", "heap"), HEAP_COLOR, "heap (allocated)", None),
        (stack("stack", "heap"), stack("stack", "heap", "free"), FREE_COLOR, "free",
         "free_area")]
    for y1, y2, color, label, name in areas:
        _after(fig.glyph("VAreaStep", source, x=field("x"), y1=y1, y2=y2, fill_color=color,
                         fill_alpha=0.55, legend_label=label, name=name), "step_mode")
    _after(fig.glyph("Step", source, x=field("x"), y=field("in_use"), line_color="#8c2d04",
                     line_width=1), "mode")
    # hovered by its points: the snapshot at or before the cursor (the view shows its card)
    points = fig.glyph("Line", source, x=field("x"), y=field("in_use"), line_alpha=0)
    if not kineto:
        fragmentation = _after(fig.glyph(
            "Step", source, x=field("x"), y=field("fragmentation"),
            line_color=FRAGMENTATION_COLOR, line_width=1, line_dash="dashed",
            legend_label="fragmentation (%)"), "mode")
        fragmentation["attributes"]["y_range_name"] = "fragmentation"
    fig.add_layout(model("Span", location=0, dimension="height", line_color="#d62728",
                         line_width=1.5, line_dash="dotted", name="peak", visible=False))
    fig.add_layout(model("Label", x=0, y=0, x_units="data", y_units="screen", text="",
                         name="peak_label", text_font_size="11px", text_color="#d62728",
                         x_offset=4, y_offset=4, background_fill_color="white",
                         background_fill_alpha=0.8, visible=False))
    fig.add_tool(_charts.hover([points], None, mode="vline", line_policy="prev", name="hover"))
    fig.legend_of().update(orientation="horizontal", label_text_font_size="10px",
                           border_line_color=None, padding=2, margin=2, click_policy="hide")
    fig.place_legend_above()
    return fig


def _after(renderer: dict, mode: str) -> dict:
    """Steps that hold from each snapshot to the next (`mode` is a plain enum property, not a
    data spec, so it is set on the glyph as it is)."""
    renderer["attributes"]["glyph"]["attributes"][mode] = "after"
    return renderer
