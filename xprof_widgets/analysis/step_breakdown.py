"""The step breakdown: each step's time split into the categories of XProf's step-time graph,
computed once here and read by the Input Pipeline, the Pod Viewer, the Overview and compare.

A step runs on units: device cores (TPU core, GPU), or on a CPU-only run the host's threads.
Over a step's period on a unit (steps.py: a host-marked step's period starts where the step
before it ended), each instant goes to the first category in CATEGORIES that covers it, so the
categories add up to the step time:

- Device compute: the unit's device ops not named below;
- Device collective communication: all-reduce, all-gather, reduce-scatter, all-to-all,
  collective-permute, NCCL, and GPU kernels of kernel_families.COMMUNICATION_FAMILIES;
- Device to device: other device-to-device copies, send / recv;
- Host to device: the device's host-to-device ops and, on the thread that runs the steps, the
  host's enqueue and transfers (input_events.py);
- Waiting for input: the device's infeed; under host-marked steps the host's input work on the
  thread that runs the steps, less the part that launches GPU kernels (input_events.py), and
  waits for a tf.data iterator on any thread;
- Output: outfeed, device-to-host copies;
- Compilation: XLA or TensorFlow compiling on the unit's host (events named `...compil...`);
- Kernel launch: under host-marked steps, the host's work that launches device work (events
  with a `correlation_id`, as XProf's "host prepare");
- Host compute: under host-marked steps, the host's work nested in the step markers on the
  thread that runs them, and on a CPU-only run the XLA ops on the host's threads (the host is
  the device there; XProf counts them where its step grouping ties them to the step through
  flows, which it does in some steps only); devices with their own step markers (TPU `Steps`
  lines) are measured on the device alone, as XProf measures TPU steps;
- All others: none of these (idle, waits, untraced work).

XProf's own parts (its pod viewer, its input pipeline's step graph) are sums of these
(XPROF_PARTS): its "Input" is host to device and waiting for input together.

The steps measured are those XProf's step database holds: on host-marked XSpace and JAX runs a
step without compute inside its marker is left out (steps.ill_formed), with its reason in
`BreakdownPart.left_out`; PyTorch traces keep every step. The Input Pipeline then leaves out
the ends of a long run too (steps.edge_steps), as XProf's does; the Pod Viewer does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._native.intervals import covered_before
from ..profile.model import PS_PER_US, Profile
from ..profile.ordering import is_derived_line
from ..profile.threads import each_balanced
from .hosts import host_parts
from .input_events import DEFAULT_INPUT_PATTERN, HostEvents, host_input_events, input_pieces
from .kernel_families import is_communication
from .kineto import CPU_OPS, KERNELS, has_category
from .step_intersection import common_steps
from .steps import (
    LEFT_OUT_COLUMNS,
    SOURCES,
    EventRun,
    Steps,
    device_sections,
    event_run,
    find_steps,
    host_tracks,
    ill_formed,
    stat_hits,
    track_events,
    track_runs,
)

CATEGORIES = (
    ("compute_us", "Device compute"),
    ("collectives_us", "Device collective communication"),
    ("device_to_device_us", "Device to device"),
    ("host_to_device_us", "Host to device"),
    ("input_us", "Waiting for input"),
    ("output_us", "Output"),
    ("compile_us", "Compilation"),
    ("kernel_launch_us", "Kernel launch"),
    ("host_compute_us", "Host compute"),
    ("other_us", "All others"),
)
"""(column, the name shown to users), in the order the categories claim time."""
COLUMNS = tuple(column for column, _ in CATEGORIES)
NAMES = dict(CATEGORIES)
XPROF_PARTS = {
    "Device compute": ("compute_us",),
    "Device to device": ("device_to_device_us",),
    "Device collective communication": ("collectives_us",),
    "Host compute": ("host_compute_us",),
    "Kernel launch": ("kernel_launch_us",),
    "Input": ("host_to_device_us", "input_us"),
    "Output": ("output_us",),
    "Compilation": ("compile_us",),
    "All others": ("other_us",),
}
"""XProf's generic step-breakdown parts (its names) as sums of our categories."""
ROW_COLUMNS = ["step", "name", "host", "unit", "start_us", "duration_us", "before_step_us",
               *COLUMNS]
NON_OP_LINES = {"Steps", "XLA Modules", "XLA TraceMe", "Framework Ops", "Framework Name Scope",
                "TensorFlow Ops", "TensorFlow Name Scope", "Source code", "Launch Stats",
                "_counters_", "Tensor Core Sync Flag", "Sparse Core Steps", "Sparse Core Modules",
                "Host Offload Ops"}
"""Device lines that hold no ops of their own."""

_LEVEL = {column: k for k, column in enumerate(COLUMNS)}
_NONE = 127  # a level that claims nothing
_COLLECTIVE_TEXT = re.compile(r"(?i)all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|"
                              r"collective-?permute|collective|nccl|rccl")
_D2D_TEXT = re.compile(r"(?i)\bd(?:to|2)d\b|memcpyd(?:to|2)d|device.?to.?device|"
                       r"^(?:send|recv)(?:-done)?\b|megascale")
_H2D_TEXT = re.compile(r"(?i)\bh(?:to|2)d\b|memcpyh(?:to|2)d|host.?to.?device|host (?:send|recv)")
_INFEED_TEXT = re.compile(r"(?i)^infeed|infeeddequeue")
_OUTPUT_TEXT = re.compile(r"(?i)^outfeed|\bd(?:to|2)h\b|memcpyd(?:to|2)h|device.?to.?host")
_DEVICE_CLASSES = ((_INFEED_TEXT, "input_us"), (_H2D_TEXT, "host_to_device_us"),
                   (_COLLECTIVE_TEXT, "collectives_us"), (_D2D_TEXT, "device_to_device_us"),
                   (_OUTPUT_TEXT, "output_us"))
"""What a device op does, by its hlo_category or short name: the first that matches."""
_COMPILE = re.compile(r"(?i)compil")


@dataclass(frozen=True)
class BreakdownPart:
    """One host's breakdown (analysis/hosts.py), in that host's frame: its step markers and one
    row per step and unit: step, name, device (the unit), start_ps, duration_ps,
    before_step_ps (the period before the step's marker), each category over the period (ps,
    in the category's column) and before the marker (`before_` + column). `left_out`: the
    steps found but not measured, and why (steps.LEFT_OUT_COLUMNS); `xprof_rule`: whether
    XProf's rule for which steps count applies (host-marked XSpace and JAX runs)."""

    steps: Steps
    rows: pd.DataFrame
    left_out: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=LEFT_OUT_COLUMNS))
    xprof_rule: bool = False


def breakdown_part(profile: Profile, input_pattern: str = DEFAULT_INPUT_PATTERN
                   ) -> BreakdownPart:
    """The step breakdown of one host's `profile`; made once per profile and pattern."""
    return profile.memo(("step_breakdown_part", input_pattern),
                        lambda: _part(profile, input_pattern))


def step_breakdown(profile: Profile, input_pattern: str = DEFAULT_INPUT_PATTERN,
                   within: str = "period") -> pd.DataFrame:
    """One row per step and unit of every host (ROW_COLUMNS, microseconds): the step's time
    split into CATEGORIES (see the module doc). `within="marker"` measures the step marker's
    own span instead of the period (XProf's step time; before_step_us is then 0). With several
    hosts the steps are those all hosts ran, aligned as XProf aligns them
    (step_intersection.py); units are named with their host."""
    if within not in ("period", "marker"):
        raise ValueError(f"within is 'period' or 'marker', not {within!r}")
    parts = host_parts(profile, breakdown_part, input_pattern)
    frames = [on_whole_timeline(p.part.rows, p.host, p.shift_ps) for p in parts]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("name", "host", "unit") else
                                          np.int64 if c == "step" else np.float64)
                             for c in ROW_COLUMNS})
    rows = common_steps(frames) if len(frames) > 1 else frames[0]
    before = rows["before_step_ps"].to_numpy(np.int64)
    out = rows[["step", "name", "host"]].copy()
    out["unit"] = rows["unit"].to_numpy(dtype=object)
    marker = within == "marker"
    out["start_us"] = (rows["start_ps"].to_numpy(np.int64) + (before if marker else 0)) / PS_PER_US
    out["duration_us"] = (rows["duration_ps"].to_numpy(np.int64)
                          - (before if marker else 0)) / PS_PER_US
    out["before_step_us"] = 0.0 if marker else before / PS_PER_US
    for column in COLUMNS:
        ps = rows[column].to_numpy(np.int64)
        if marker:
            ps = ps - rows["before_" + column].to_numpy(np.int64)
        out[column] = ps / PS_PER_US
    return out.sort_values(["step", "host", "unit"], kind="stable").reset_index(drop=True)


def on_whole_timeline(rows: pd.DataFrame, host: str, shift_ps: int) -> pd.DataFrame:
    """A host's part rows on the whole profile's timeline: `host` added, `device` the unit
    named with its host (one unit per host), `unit` the unit's own name."""
    rows = rows.copy()
    rows["start_ps"] = rows["start_ps"].astype(np.int64) + shift_ps
    rows["host"] = host
    rows["unit"] = rows["device"]
    rows["device"] = host + " " + rows["device"].astype(str)
    return rows


def xprof_parts(rows: pd.DataFrame) -> pd.DataFrame:
    """XProf's parts (XPROF_PARTS, its names as columns) of each row of a breakdown."""
    return pd.DataFrame({name: rows[list(columns)].sum(axis=1)
                         for name, columns in XPROF_PARTS.items()})


def _part(profile: Profile, input_pattern: str) -> BreakdownPart:
    steps = find_steps(profile)
    markers = steps.markers
    if not len(markers):
        return BreakdownPart(steps, pd.DataFrame(columns=_PART_COLUMNS))
    host = host_input_events(profile, steps, input_pattern)
    op_levels = device_levels(profile)
    shared = _host_runs(profile, steps)
    units = list(_assign_units(markers, _units(profile)).items())
    # The units' sweeps on worker threads (the sweep runs without the GIL), in unit order.
    blocks = each_balanced(
        lambda item: _unit_block(profile, *item, op_levels, steps, host, shared), units,
        [_unit_events(profile, unit) for unit, _ in units])
    rows = pd.concat(blocks, ignore_index=True)
    if steps.source == SOURCES[0] or has_category(profile, (*CPU_OPS, *KERNELS)):
        return BreakdownPart(steps, rows)  # TPU Steps lines are whole; PyTorch keeps its steps
    left_out = _ill_formed(rows, any(unit in device_sections(profile) for unit, _ in units))
    return BreakdownPart(steps, rows[~rows["step"].isin(left_out["step"])].reset_index(drop=True),
                         left_out, xprof_rule=True)


def _ill_formed(rows: pd.DataFrame, on_device: bool) -> pd.DataFrame:
    """The steps XProf does not measure (steps.ill_formed): a step is well formed when some
    unit computes inside its marker (on devices where the run has them, else on the host)."""
    column = "compute_us" if on_device else "host_compute_us"
    inside = rows[column].to_numpy(np.int64) - rows["before_" + column].to_numpy(np.int64)
    per_step = pd.DataFrame({"step": rows["step"], "name": rows["name"], "has_work": inside > 0})
    per_step = per_step.groupby("step", sort=True).agg(name=("name", "first"),
                                                       has_work=("has_work", "any"))
    return ill_formed(per_step.reset_index(), "device" if on_device else "host")


def _unit_block(profile: Profile, unit: str, unit_markers: pd.DataFrame, op_levels: np.ndarray,
                steps: Steps, host: HostEvents, shared: list[EventRun]) -> pd.DataFrame:
    """One unit's rows of the breakdown, a row per step."""
    start = unit_markers["period_start_ps"].to_numpy(np.int64)
    marked = unit_markers["start_ps"].to_numpy(np.int64)
    end = unit_markers["end_ps"].to_numpy(np.int64)
    runs = _unit_runs(profile, unit, op_levels, steps, host) + shared
    # Time covered by each category and those before it, up to each period's start, each
    # marker's start and each step's end: one sweep answers all three.
    at_start, at_marked, at_end = np.split(
        covered_before(runs, len(COLUMNS) - 1, np.concatenate([start, marked, end])), 3,
        axis=1)
    block = unit_markers[["step", "name"]].copy()
    block["device"] = unit
    block["start_ps"] = start
    block["duration_ps"] = end - start
    block["before_step_ps"] = marked - start
    for prefix, covered, total in (("", at_end - at_start, end - start),
                                   ("before_", at_marked - at_start, marked - start)):
        claimed = np.diff(covered, axis=0, prepend=0)
        for k, column in enumerate(COLUMNS[:-1]):
            block[prefix + column] = claimed[k]
        block[prefix + "other_us"] = total - covered[-1]
    return block


def _unit_events(profile: Profile, unit: str) -> int:
    """The events of a unit's op lines: what its sweep reads, so the threads' share."""
    if unit not in device_sections(profile):
        return 0
    return int(profile.built_tracks.loc[_op_tracks(profile, unit), "n_events"].sum())


_PART_COLUMNS = ["step", "name", "device", "start_ps", "duration_ps", "before_step_ps",
                 *COLUMNS, *("before_" + c for c in COLUMNS)]


def device_levels(profile: Profile) -> np.ndarray:
    """Per metadata row, the category (its index in COLUMNS) a device op claims, or _NONE for
    rows that are not device ops."""
    md = profile.metadata
    out = np.full(len(md), _NONE, np.int8)
    device_ids = profile.sections.index[profile.sections["kind"] == "device"].to_numpy()
    names = profile.display_names
    stats = md["stats"].tolist()
    for row in np.flatnonzero(np.isin(md["section_id"].to_numpy(), device_ids)).tolist():
        category = str(stats[row].get("hlo_category", ""))
        name = names[row]
        out[row] = _device_level(category, name)
    return out


def _device_level(category: str, name: str) -> int:
    """The category level of one device op: the first of _DEVICE_CLASSES its hlo_category or
    name matches; a GPU kernel of a communication family (kernel_families: DeepEP, NVSHMEM,
    symmetric memory...) is a collective too, else compute."""
    for text, column in _DEVICE_CLASSES:
        if text.search(category) or text.search(name):
            return _LEVEL[column]
    return _LEVEL["collectives_us" if is_communication(name) else "compute_us"]


def host_step_work(profile: Profile, steps: Steps) -> np.ndarray:
    """Events of the host's own work inside host-marked steps: everything nested under the step
    markers on the threads that run them (none for device-marked steps)."""
    if steps.source == SOURCES[0]:
        return np.empty(0, np.int64)
    stepping = track_events(profile, np.asarray(steps.step_tracks, np.int64))
    return stepping[profile.depth[stepping] > 0]


def _host_runs(profile: Profile, steps: Steps) -> list[EventRun]:
    """The host's compiling (any thread), and under host-marked steps its kernel launches and
    its other work inside the markers: the same for every unit of the host."""
    host_events = track_events(profile, _host_slice_tracks(profile))
    compiling = np.fromiter((bool(_COMPILE.search(n)) for n in profile.display_names.tolist()),
                            bool, len(profile.display_names))
    work = host_step_work(profile, steps)
    launches, _ = stat_hits(profile, work, "correlation_id") if len(device_sections(profile)) \
        else (np.empty(0, np.int64), None)
    return [event_run(profile, host_events[compiling[profile.meta[host_events]]],
                      _LEVEL["compile_us"]),
            event_run(profile, launches, _LEVEL["kernel_launch_us"]),
            event_run(profile, work, _LEVEL["host_compute_us"])]


def _unit_runs(profile: Profile, unit: str, op_levels: np.ndarray, steps: Steps,
               host: HostEvents) -> list[EventRun]:
    """What claims a unit's step time besides the host's shared work: its device ops (on a
    CPU-only run its threads' XLA ops, as host compute), its host's transfers and input."""
    on_host = profile.built_tracks["host"].to_numpy()[profile.track_of(host.events)] == \
        _host_of(profile, unit)
    # Input work counts on the thread that runs the steps; waiting for the next element of a
    # tf.data iterator counts on any thread (TensorFlow runs the op on its own pool).
    wait_here = host.on_step_thread | host.is_wait
    host_input = host.events[on_host & wait_here & ~host.is_enqueue]
    host_h2d = host.events[on_host & host.on_step_thread & host.is_enqueue]
    runs = [event_run(profile, host_h2d, _LEVEL["host_to_device_us"])]
    input_run = _input_run(profile, host, host_input)
    if unit in device_sections(profile):
        runs += track_runs(profile, _op_tracks(profile, unit), op_levels)
        # A device with its own step markers waits for input in its infeed (as XProf measures
        # TPU steps); under host-marked steps it waits while the host prepares input.
        if steps.source != SOURCES[0]:
            runs.append(input_run)
        return runs
    return runs + [input_run,
                   event_run(profile, cpu_xla_ops(profile, unit), _LEVEL["host_compute_us"])]


def _input_run(profile: Profile, host: HostEvents, events: np.ndarray) -> EventRun:
    """The input events' time less what launches GPU kernels (input_events.py), sorted."""
    start, duration = input_pieces(profile, host, events)
    order = np.argsort(start, kind="stable")
    return start[order], duration[order], np.full(start.shape[0], _LEVEL["input_us"], np.int8)


def cpu_xla_ops(profile: Profile, section: str) -> np.ndarray:
    """The XLA ops a CPU-only run's host section ran (events with an `hlo_op` stat on its
    threads): its compute, which is host compute there."""
    tracks = profile.built_tracks.index[(profile.built_tracks["section"] == section)
                                  & (profile.built_tracks["kind"] == "slices")].to_numpy()
    return stat_hits(profile, track_events(profile, tracks), "hlo_op")[0]


def _units(profile: Profile) -> dict[str, str]:
    """Where a step runs, by section name -> host: devices, or the hosts of a CPU-only run."""
    hosts = dict(zip(profile.sections["name"], profile.sections["host"], strict=True))
    devices = [d for d in device_sections(profile) if len(_op_tracks(profile, d))]
    if devices:
        return {d: hosts[d] for d in devices}
    used = profile.built_tracks.loc[host_tracks(profile), "section"].unique().tolist()
    return {s: hosts[s] for s in used}


def _assign_units(markers: pd.DataFrame, units: dict[str, str]) -> dict[str, pd.DataFrame]:
    """Markers on a unit stay there; host markers of a run with devices go to its devices."""
    out: dict[str, list[pd.DataFrame]] = {}
    for section, group in markers.groupby("section", sort=False):
        if section in units:
            targets = [section]
        else:
            host = group["host"].iat[0]
            targets = [u for u, h in units.items() if h == host] or [section]
        for unit in targets:
            out.setdefault(unit, []).append(group)
    return {unit: pd.concat(groups, ignore_index=True) for unit, groups in out.items()}


def _host_of(profile: Profile, section: str) -> str:
    s = profile.sections
    return str(s["host"][s["name"] == section].iat[0])


def _op_tracks(profile: Profile, section: str) -> np.ndarray:
    t = profile.built_tracks
    keep = (t["section"] == section) & (t["kind"] == "slices") & ~t["name"].isin(NON_OP_LINES) \
        & ~t["line_id"].map(is_derived_line).astype(bool)  # rows drawn from the ops themselves
    return t.index[keep].to_numpy(np.int64)


def _host_slice_tracks(profile: Profile) -> np.ndarray:
    t = profile.built_tracks
    return t.index[(t["section_kind"] == "host") & (t["kind"] == "slices")].to_numpy(np.int64)
