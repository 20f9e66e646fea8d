"""Input pipeline analysis: how much of each step waits for input, and what the input costs.

Device side, per step (steps from `steps.find_steps`), every instant of the step is given to the
first of these that covers it: compute (device ops; XLA ops on host threads for CPU-only
profiles), device-to-device and collectives, host-to-device (enqueue, transfers), waiting for
input (device infeed; input work on the thread that runs the steps), and other (idle, dispatch,
Python). A step's input share is (waiting for input + host-to-device) / step time, as in XProf;
the profile's share is that total over all steps' time: >= 20% HIGHLY, >= 5% MODERATELY, else
NOT input-bound. On a multi-chip profile a step lasts as long as its slowest chip and is broken
down on that chip.

Host side, input operations are tf.data iterators (`Iterator::...`), grain iterators, enqueue
and host-to-device transfers, and user annotations whose names match `input_pattern`. Self
time is an op's time minus that of input ops nested in it. Categories follow XProf: tf.data
readers (`::TFRecord`, `::TextLine`, ...) are a demanded file read, or an advanced one under
`::Prefetch`, `::Interleave` or `::ParallelMap`; other tf.data ops and grain are preprocessing.
User annotations that read or load are a demanded file read on the thread that runs the steps
and an advanced one on any other thread (that is reading ahead); ones that preprocess, augment,
decode, tokenize or batch are preprocessing; the rest is other input time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .._native.intervals import covered_before
from .._native.intervals import self_times as _self_times
from .._native.intervals import union_intervals as _merge
from ..profile.model import PS_PER_US, Profile
from ..profile.ordering import is_derived_line
from .hosts import HostPart, host_parts
from .step_intersection import common_steps
from .steps import (
    HOW_TO_MARK,
    SOURCES,
    EventRun,
    Steps,
    device_sections,
    event_run,
    find_steps,
    host_tracks,
    stat_hits,
    track_events,
    track_runs,
)

DEFAULT_INPUT_PATTERN = (
    r"(?i)^_*(?:(?:get|next|make)_?)?(?:input|inputs|data|dataset|datasets|dataloader|data_loader|"
    r"loader|load|loading|batch|batches|prefetch|preprocess|preprocessing|augment|augmentation|"
    r"decode|read|reader|fetch|shuffle|tokenize|tokenization|collate)(?![a-z0-9])"
    r"|dataloader|data_loader|\b__next__$")
"""Names of user code that counts as input work, in any case: a word like `input`, `data`,
`batch`, `load`, `read`, `prefetch` or `preprocess` starting the name (`load_batch`,
`input_pipeline`, `NextBatch`, `_load_batch`), a data loader (PyTorch's
`enumerate(DataLoader)#...__next__`), or an iterator's `__next__` (the loader of a plain
`for batch in loader:`). Python-tracer frames (`$file.py:12 __next__`) are matched by their
function name. Runtime events (`LoadProgram`, `Handle inputs`) do not match."""

HIGHLY, MODERATELY, NOT = "HIGHLY", "MODERATELY", "NOT"
HIGHLY_PCT, MODERATELY_PCT = 20.0, 5.0
ENQUEUE, DEMANDED, ADVANCED, PREPROCESSING, OTHER_INPUT = (
    "Enqueue", "Demanded file read", "Advanced file read", "Preprocessing", "Other input time")
HOST_CATEGORIES = (ENQUEUE, DEMANDED, ADVANCED, PREPROCESSING, OTHER_INPUT)
STEP_PARTS = ("compute_us", "device_to_device_us", "host_to_device_us", "input_us",
              "host_compute_us", "other_us")
"""Per-step time columns, in the order an instant is claimed (compute first). Host compute is
work on the thread that runs host-marked steps that no earlier part claims (XProf's "Host
compute"); the Pod Viewer splits the same time the same way."""
STEP_COLUMNS = ["step", "name", "start_us", "duration_us", "compute_us", "input_us",
                "host_to_device_us", "device_to_device_us", "host_compute_us", "other_us",
                "input_share", "device",
                "before_step_us", "input_before_step_us"]
"""A host-marked step's period starts where the step before it ended (steps.py): before_step_us
is the part before its own marker, input_before_step_us the input time in that part (a loader's
`__next__` between step annotations); both are 0 for device steps."""
OP_COLUMNS = ["input_op", "count", "total_time_ms", "total_time_pct", "self_time_ms",
              "self_time_pct", "category"]

# Host event kinds (per metadata row).
_NONE, _INPUT, _ENQUEUE, _WAIT = 0, 1, 2, 3
_TFDATA = re.compile(r"^Iterator::")
_GRAIN = re.compile(r"^(?:grain\b|Grain)|DatasetIterator")
_ENQUEUE_NAME = re.compile(
    r"^(?:InfeedEnqueue|TransferToInfeed|TransferToDevice|TransferLiteralToDevice|"
    r"MemcpyHToD|DevicePut|BufferFromPyval|HostToDevice)|:(?:InfeedEnqueue\w*|MemcpyHToD)$")
"""Host-side transfers to the device: TensorFlow's infeed enqueue and `MemcpyHToD` ops, as XProf
counts them, and JAX's and PjRt's transfers. TensorFlow's host ops named `MemcpyH2D` or `_Send*`
only hand a tensor to the GPU stream, whose own copy events are the transfer; counting both
made a TF GPU run look input-bound where XProf measures no input time."""
_TF_OP = re.compile(r"[^:]+:[A-Z]\w*")
_WAIT_NAME = re.compile(r"^IteratorGetNext|:IteratorGetNext\w*$")
_FILE_READERS = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO",
                 "::ArrayRecord")
_READ_AHEAD = ("::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap")
_READ_WORDS = {"read", "reader", "load", "loader", "loading", "fetch", "dataloader", "source"}
_PREP_WORDS = {"preprocess", "preprocessing", "augment", "augmentation", "decode", "tokenize",
               "tokenization", "transform", "map", "shuffle", "batch", "batches", "collate"}
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

# Device op classes (per metadata row), and the device lines that hold no ops.
_COMPUTE, _D2D, _H2D, _INFEED, _DEVICE_OTHER = 0, 1, 2, 3, 4
_D2D_TEXT = re.compile(r"(?i)\bd(?:to|2)d\b|memcpyd(?:to|2)d|device.?to.?device|all-?reduce|"
                       r"all-?gather|all-?to-?all|reduce-?scatter|collective|nccl|rccl|"
                       r"^(?:send|recv)(?:-done)?\b|megascale")
_H2D_TEXT = re.compile(r"(?i)\bh(?:to|2)d\b|memcpyh(?:to|2)d|host.?to.?device|host (?:send|recv)")
_INFEED_TEXT = re.compile(r"(?i)^infeed|infeeddequeue")
_DEVICE_OTHER_TEXT = re.compile(r"(?i)^outfeed|\bd(?:to|2)h\b|memcpyd(?:to|2)h|device.?to.?host")
NON_OP_LINES = {"Steps", "XLA Modules", "XLA TraceMe", "Framework Ops", "Framework Name Scope",
                "TensorFlow Ops", "TensorFlow Name Scope", "Source code", "Launch Stats",
                "_counters_", "Tensor Core Sync Flag", "Sparse Core Steps", "Sparse Core Modules",
                "Host Offload Ops"}


@dataclass(frozen=True)
class InputPipelineAnalysis:
    """The result of `analyze_input_pipeline`; every table is a plain DataFrame."""

    steps: pd.DataFrame
    """One row per step, STEP_COLUMNS (times in microseconds, input_share a fraction)."""
    input_ops: pd.DataFrame
    """Host input operations, OP_COLUMNS, by self time (largest first)."""
    host_breakdown: pd.Series
    """Self time (ms) of host input operations per category, HOST_CATEGORIES order."""
    step_markers: Steps
    input_pattern: str
    framework: str | None = None
    """What wrote the profile (tools.framework), so the advice names its own annotation."""

    @property
    def input_share(self) -> float:
        """Share of all steps' time spent waiting for input (0..1); NaN without steps."""
        total = float(self.steps["duration_us"].sum())
        if total <= 0:
            return float("nan")
        return float((self.steps["input_us"] + self.steps["host_to_device_us"]).sum()) / total

    @property
    def verdict(self) -> str | None:
        """HIGHLY, MODERATELY or NOT (input-bound); None when no steps were found."""
        if not len(self.steps) or not np.isfinite(self.input_share):
            return None
        pct = 100 * self.input_share
        return HIGHLY if pct >= HIGHLY_PCT else MODERATELY if pct >= MODERATELY_PCT else NOT

    def step_time_stats(self) -> pd.Series:
        """Average, standard deviation (of a sample, as XProf), min and max step time in ms."""
        ms = self.steps["duration_us"] / 1000
        return pd.Series({"avg_ms": ms.mean(), "std_ms": ms.std(ddof=1), "min_ms": ms.min(),
                          "max_ms": ms.max()}, dtype=np.float64)

    def largest_host_cost(self) -> tuple[str, float, str] | None:
        """(category, share of host input self time, its costliest op), or None without ops."""
        total = float(self.host_breakdown.sum())
        if total <= 0:
            return None
        category = str(self.host_breakdown.idxmax())
        ops = self.input_ops[self.input_ops["category"] == category]
        return category, float(self.host_breakdown[category]) / total, str(ops["input_op"].iat[0])

    def recommendation(self) -> str:
        """What to do next, in words, naming the largest host-side cost."""
        largest = self.largest_host_cost()
        if largest is None:
            host = ("No input operations were found on the host. Wrap the parts of your input "
                    f"pipeline in {annotation(self.framework)} (names starting with load_, "
                    "read_, preprocess_, input_, ...) or pass input_pattern= to see where input "
                    "time goes.")
        else:
            category, share, op = largest
            advice = _ADVICE[category].format(annotation=annotation(self.framework))
            host = (f"The largest host-side input cost is {category} ({100 * share:.0f}% of "
                    f"input-op self time, mostly {op!r}): {advice}")
        verdict = self.verdict
        if verdict is None:
            return f"No steps were found, so step time cannot be split. {host}"
        pct = 100 * self.input_share
        if verdict == NOT:
            return (f"Your program is NOT input-bound: {pct:.1f}% of step time waits for input. "
                    f"Look at {_NEXT_TOOL.get(self.framework, _NEXT_TOOL[None])} instead. " + host)
        return (f"Your program is {verdict} input-bound: {pct:.1f}% of step time waits for "
                f"input. {host}")

    def no_steps_message(self) -> str:
        """Why the device side is empty and how to fix it ('' when steps were found)."""
        if len(self.steps):
            return ""
        looked = "\n".join(f"  - {what}" for what in self.step_markers.looked_for)
        return f"No training steps found. Looked for:\n{looked}\n{HOW_TO_MARK}"


_ADVICE = {
    ENQUEUE: "copies to the device dominate; send fewer, larger batches and overlap the copies "
             "with compute (prefetch to device).",
    DEMANDED: "the step waits while data is read; read ahead in the background (tf.data "
              "prefetch/interleave, grain worker processes, a prefetching thread) so reads "
              "overlap compute.",
    ADVANCED: "data is read ahead but not fast enough; read with more parallelism or larger "
              "buffers (interleave cycle_length, more grain workers), or cache the dataset.",
    PREPROCESSING: "parallelize preprocessing (num_parallel_calls, more workers), do it once "
                   "offline, or move it onto the accelerator.",
    OTHER_INPUT: "annotate the parts of this input code with {annotation} to see which one is "
                 "slow, then read ahead or parallelize it.",
}
_NEXT_TOOL = {"PyTorch": "the GPU's kernels (Kernel Stats)", None: "device compute (Op Profile)"}
"""Where a program that is not input-bound spends its time: Kineto traces have no XLA ops."""
_ANNOTATIONS = {"JAX": "jax.profiler.TraceAnnotation",
                "TensorFlow": "tf.profiler.experimental.Trace",
                "PyTorch": "torch.profiler.record_function"}


def annotation(framework: str | None) -> str:
    """The framework's way to name a region of host code in its trace."""
    if framework in _ANNOTATIONS:
        return _ANNOTATIONS[framework]
    return ("your framework's trace annotation (jax.profiler.TraceAnnotation, "
            "tf.profiler.experimental.Trace, torch.profiler.record_function)")


def analyze_input_pipeline(profile: Profile,
                           input_pattern: str = DEFAULT_INPUT_PATTERN) -> InputPipelineAnalysis:
    """Per-step input share and host input operations of `profile` (see the module doc);
    computed once per pattern and profile."""
    return profile.memo(("input_pipeline", input_pattern),
                        lambda: _analyze(profile, input_pattern))


def _analyze(profile: Profile, input_pattern: str) -> InputPipelineAnalysis:
    from ..tools import framework  # the registry reads profiles, not the analyses

    analysis = combine_input_parts(host_parts(profile, input_pipeline_part, input_pattern),
                                   input_pattern)
    return replace(analysis, framework=framework(profile))


@dataclass(frozen=True)
class InputPipelinePart:
    """One host's part (analysis/hosts.py), in that host's frame: its step markers, one row per
    step and unit (device, or host thread of a CPU-only run) before the units are folded, and
    its input ops' raw sums (count, total and self time in ps)."""

    steps: Steps
    unit_steps: pd.DataFrame
    op_sums: pd.DataFrame


def input_pipeline_part(profile: Profile, input_pattern: str) -> InputPipelinePart:
    """The input pipeline's per-host part of `profile` (one host); made once per profile."""
    return profile.memo(("input_pipeline_part", input_pattern),
                        lambda: _part(profile, input_pattern))


def _part(profile: Profile, input_pattern: str) -> InputPipelinePart:
    steps = find_steps(profile)
    host = _input_events(profile, steps, input_pattern)
    return InputPipelinePart(steps, _unit_steps(profile, steps, host), _op_sums(profile, host))


def _input_events(profile: Profile, steps: Steps, input_pattern: str) -> _HostEvents:
    return profile.memo(("input_events", input_pattern), lambda: _host_input_events(
        profile, input_pattern, steps.step_tracks))


def combine_input_parts(parts: list[HostPart[InputPipelinePart]],
                        input_pattern: str) -> InputPipelineAnalysis:
    """The analysis of every host: the steps common to all hosts (as XProf intersects them, see
    step_intersection.py), each as long as its slowest unit on any host, and the input ops of
    every host summed."""
    if len(parts) == 1:
        part = parts[0].part
        unit_steps, steps = part.unit_steps, part.steps
    else:
        unit_steps = common_steps([_on_whole_timeline(p) for p in parts])
        steps = _all_markers(parts)
    sums = pd.concat([p.part.op_sums for p in parts], ignore_index=True)
    if len(parts) > 1:
        sums = sums.groupby(["input_op", "category"], sort=False).sum().reset_index()
    ops, breakdown = _op_table(sums)
    return InputPipelineAnalysis(_step_table(unit_steps), ops, breakdown, steps, input_pattern)


def _on_whole_timeline(part: HostPart[InputPipelinePart]) -> pd.DataFrame:
    """A host's unit rows on the whole profile's timeline, units named with their host."""
    rows = part.part.unit_steps.copy()
    rows["start_ps"] += part.shift_ps
    rows["device"] = part.host + " " + rows["device"].astype(str)
    return rows


def _all_markers(parts: list[HostPart[InputPipelinePart]]) -> Steps:
    """Every host's step markers on the whole profile's timeline and tracks."""
    frames, tracks = [], []
    for p in parts:
        m = p.part.steps.markers.copy()
        for column in ("start_ps", "end_ps", "period_start_ps"):
            m[column] += p.shift_ps
        m["track"] = np.where(m["track"] >= 0, m["track"] + p.track_base, m["track"])
        frames.append(m)
        tracks.extend(t + p.track_base for t in p.part.steps.step_tracks)
    sources = [p.part.steps.source for p in parts if p.part.steps.source]
    markers = pd.concat(frames, ignore_index=True).sort_values(
        ["step", "host", "section", "start_ps"], kind="stable").reset_index(drop=True)
    return Steps(markers, sources[0] if sources else "", parts[0].part.steps.looked_for,
                 tuple(sorted(tracks)))


# ---- host side --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _HostEvents:
    events: np.ndarray  # global indices of host input, enqueue and wait events
    kind: np.ndarray  # _INPUT, _ENQUEUE or _WAIT
    category: np.ndarray  # HOST_CATEGORIES entry ("" for waits)
    on_step_thread: np.ndarray  # bool


def _host_input_events(profile: Profile, pattern: str, step_tracks: tuple[int, ...]) -> _HostEvents:
    kind_of_meta, category_of_meta, reads = _host_kinds(profile, pattern)
    events = track_events(profile, host_tracks(profile))
    events = _outside_annotations(profile, events[kind_of_meta[profile.meta[events]] != _NONE])
    meta = profile.meta[events]
    on_step = np.isin(profile.track_of(events), np.asarray(step_tracks, np.int64))
    category = category_of_meta[meta].copy()
    user_reads = reads[meta]
    category[user_reads] = np.where(on_step[user_reads] | (len(step_tracks) == 0), DEMANDED,
                                    ADVANCED)
    return _HostEvents(events, kind_of_meta[meta], category, on_step)


def _outside_annotations(profile: Profile, events: np.ndarray) -> np.ndarray:
    """Drops Python-tracer frames that lie inside another input event of their thread: the
    annotation (`load_batch`) names that work, not the frame under it (`_load_batch`)."""
    frame_rows = np.fromiter((n.startswith("$") for n in profile.display_names.tolist()), bool,
                             profile.display_names.shape[0])
    frames = frame_rows[profile.meta[events]]
    if not frames.any() or frames.all():
        return events
    keep = np.ones(events.shape[0], bool)
    tracks = profile.track_of(events)
    start = profile.start_ps[events]
    end = start + profile.duration_ps[events]
    for track in np.unique(tracks[frames]).tolist():
        named = ~frames & (tracks == track)
        if not named.any():
            continue
        union = _merge(start[named], end[named])
        mine = np.flatnonzero(frames & (tracks == track))
        inside = _measure(*union, start[mine], end[mine]) >= end[mine] - start[mine]
        keep[mine[inside]] = False
    return events[keep]


def _host_kinds(profile: Profile, pattern: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per metadata row: host kind, op category, and whether it is a user read (thread-dependent)."""
    md = profile.metadata
    n = len(md)
    kind = np.full(n, _NONE, np.int8)
    category = np.full(n, "", dtype=object)
    reads = np.zeros(n, bool)
    on_host = np.isin(md["section_id"].to_numpy(),
                      profile.sections.index[profile.sections["kind"] == "host"].to_numpy())
    user = re.compile(pattern)
    names = _op_names(profile)
    for row in np.flatnonzero(on_host).tolist():
        name = names[row]
        if _WAIT_NAME.search(name):
            kind[row] = _WAIT
        elif _ENQUEUE_NAME.search(name):
            kind[row], category[row] = _ENQUEUE, ENQUEUE
        elif _TFDATA.search(name):
            kind[row], category[row] = _INPUT, _tfdata_category(name)
        elif _GRAIN.search(name):
            kind[row], category[row] = _INPUT, PREPROCESSING
        elif user.search(_callable_name(name)):
            kind[row] = _INPUT
            words = {w.lower() for w in _WORD.findall(_callable_name(name))}
            if words & _READ_WORDS:
                reads[row], category[row] = True, DEMANDED
            elif words & _PREP_WORDS:
                category[row] = PREPROCESSING
            else:
                category[row] = OTHER_INPUT
    return kind, category, reads


def _op_names(profile: Profile) -> np.ndarray:
    """Host event names as the input-op table shows them: tf.data iterators by their full path
    (`Iterator::Root::Prefetch::ParallelMapV2`, as XProf lists them and as their category
    depends on), other events by their display name."""
    full = profile.metadata["name"].to_numpy(dtype=object)
    shown = profile.display_names
    return np.where([n.startswith("Iterator::") for n in full.tolist()], full, shown)


def _callable_name(name: str) -> str:
    """What user code an event names: a Python-tracer frame `$file.py:12 fn` is `fn`."""
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else name


def _op_label(name: str) -> str:
    """TensorFlow ops are written `name:Type`; the table shows the name, as XProf does."""
    return name.rsplit(":", 1)[0] if _TF_OP.fullmatch(name) else name


def _tfdata_category(name: str) -> str:
    if name.endswith(_FILE_READERS):
        return ADVANCED if any(part in name for part in _READ_AHEAD) else DEMANDED
    return PREPROCESSING


def _op_sums(profile: Profile, host: _HostEvents) -> pd.DataFrame:
    """count, total and self time (ps) per input op and category."""
    ops = host.kind != _WAIT
    events = host.events[ops]
    start = profile.start_ps[events]
    duration = profile.duration_ps[events]
    self_ps = _self_times(profile.track_of(events), start, start + duration, duration)
    labels = np.array([_op_label(n) for n in _op_names(profile).tolist()], dtype=object)
    frame = pd.DataFrame({"input_op": labels[profile.meta[events]],
                          "category": host.category[ops], "duration": duration, "self": self_ps})
    return frame.groupby(["input_op", "category"], sort=False).agg(
        count=("duration", "size"), total=("duration", "sum"), self_=("self", "sum")).reset_index()


def _op_table(sums: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    table = sums.copy()
    all_self = float(table["self_"].sum())
    scale = 100 / all_self if all_self > 0 else 0.0
    table["total_time_ms"] = table["total"] / 1e9
    table["self_time_ms"] = table["self_"] / 1e9
    table["total_time_pct"] = table["total"] * scale
    table["self_time_pct"] = table["self_"] * scale
    table["count"] = table["count"].astype(np.int64)
    table = table.sort_values(["self_time_ms", "total_time_ms"], ascending=False, kind="stable")
    breakdown = (table.groupby("category")["self_time_ms"].sum()
                 .reindex(list(HOST_CATEGORIES), fill_value=0.0).astype(np.float64))
    breakdown.index.name = "category"
    return table[OP_COLUMNS].reset_index(drop=True), breakdown


# ---- device side: per-step breakdown -------------------------------------------------------
def _step_table(unit_steps: pd.DataFrame) -> pd.DataFrame:
    if not len(unit_steps):
        return pd.DataFrame({c: pd.Series(dtype=_STEP_DTYPES.get(c, np.float64))
                             for c in STEP_COLUMNS})
    return _fold_units(unit_steps)


def _unit_steps(profile: Profile, steps: Steps, host: _HostEvents) -> pd.DataFrame:
    """One row per step and unit: start, duration and the time each part claims (ps)."""
    markers = steps.markers
    if not len(markers):
        return pd.DataFrame(columns=_UNIT_COLUMNS)
    units = _units(profile)
    op_levels = device_step_levels(profile)
    rows = []
    for unit, unit_markers in _assign_units(markers, units).items():
        start = unit_markers["period_start_ps"].to_numpy(np.int64)
        marked = unit_markers["start_ps"].to_numpy(np.int64)
        end = unit_markers["end_ps"].to_numpy(np.int64)
        # Time covered by each part and those before it, up to each step's start, mark and end.
        runs = _unit_runs(profile, unit, op_levels, _HOST_LEVELS, steps, host)
        runs.append(event_run(profile, host_step_work(profile, steps), _HOST_COMPUTE_LEVEL))
        at_start, at_marked, at_end = np.split(covered_before(
            runs, len(STEP_PARTS) - 1, np.concatenate([start, marked, end])), 3, axis=1)
        block = unit_markers[["step", "name"]].copy()
        block["device"] = unit
        block["start_ps"] = start
        block["duration_ps"] = end - start
        previous = np.zeros(start.shape[0], np.int64)
        for column, covered in zip(STEP_PARTS[:-1], at_end - at_start, strict=True):
            block[column] = covered - previous
            previous = covered
        block["other_us"] = (end - start) - previous
        block["before_step_us"] = marked - start
        before = at_marked - at_start  # covered by each part and those before it
        block["input_before_step_us"] = before[_INPUT_LEVEL] - before[_INPUT_LEVEL - 1]
        rows.append(block)
    return pd.concat(rows, ignore_index=True)


_STEP_DTYPES = {"step": np.int64, "name": object, "device": object}
_UNIT_COLUMNS = ["step", "name", "device", "start_ps", "duration_ps", *STEP_PARTS,
                 "before_step_us", "input_before_step_us"]


def _units(profile: Profile) -> dict[str, str]:
    """Where a step runs, by section name -> host: devices, or the hosts of a CPU-only run."""
    hosts = dict(zip(profile.sections["name"], profile.sections["host"], strict=True))
    devices = [d for d in device_sections(profile) if len(_op_tracks(profile, d))]
    if devices:
        return {d: hosts[d] for d in devices}
    used = profile.tracks.loc[host_tracks(profile), "section"].unique().tolist()
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


def unit_step_runs(profile: Profile, unit: str, op_levels: np.ndarray,
                   host_levels: tuple[int, int], input_pattern: str = DEFAULT_INPUT_PATTERN
                   ) -> list[EventRun]:
    """What claims a unit's step time, as runs for `covered_before`, for tools that split
    steps further and must agree with this breakdown (the pod viewer): the unit's device ops at
    op_levels[their metadata row] (`device_step_levels` gives this breakdown's), its host's
    host-to-device and input work at host_levels, and on a CPU-only run the XLA ops on the
    unit's threads at level 0. One host's profile."""
    steps = input_pipeline_part(profile, input_pattern).steps
    host = _input_events(profile, steps, input_pattern)
    return _unit_runs(profile, unit, op_levels, host_levels, steps, host)


def host_step_work(profile: Profile, steps: Steps) -> np.ndarray:
    """Events of the host's own work inside host-marked steps: everything nested under the step
    markers on the threads that run them (none for device-marked steps)."""
    if steps.source == SOURCES[0]:
        return np.empty(0, np.int64)
    stepping = track_events(profile, np.asarray(steps.step_tracks, np.int64))
    return stepping[profile.depth[stepping] > 0]


def device_step_levels(profile: Profile) -> np.ndarray:
    """Per metadata row, the part of step time a device op claims (0 compute, 1 device to
    device, 2 host to device, 3 waiting for input) or 127, none."""
    return _STEP_LEVELS[_device_classes(profile)]


_STEP_LEVELS = np.array([0, 1, 2, 3, 127], np.int8)  # by _COMPUTE, _D2D, _H2D, _INFEED, other
_HOST_LEVELS = (2, 3)  # host-to-device, input
_INPUT_LEVEL = STEP_PARTS.index("input_us")
_HOST_COMPUTE_LEVEL = STEP_PARTS.index("host_compute_us")


def _unit_runs(profile: Profile, unit: str, op_levels: np.ndarray, host_levels: tuple[int, int],
               steps: Steps, host: _HostEvents) -> list[EventRun]:
    on_host = profile.tracks["host"].to_numpy()[profile.track_of(host.events)] == \
        _host_of(profile, unit)
    # Input work counts on the thread that runs the steps; waiting for the next element of a
    # tf.data iterator counts on any thread (TensorFlow runs the op on its own pool).
    wait_here = host.on_step_thread | (host.kind == _WAIT)
    host_input = host.events[on_host & wait_here & (host.kind != _ENQUEUE)]
    host_h2d = host.events[on_host & host.on_step_thread & (host.kind == _ENQUEUE)]
    h2d_level, input_level = host_levels
    runs = [event_run(profile, host_h2d, h2d_level)]
    if unit in device_sections(profile):
        runs += track_runs(profile, _op_tracks(profile, unit), op_levels)
        # A device with its own step markers waits for input in its infeed (as XProf measures
        # TPU steps); under host-marked steps it waits while the host prepares input.
        if steps.source != SOURCES[0]:
            runs.append(event_run(profile, host_input, input_level))
    else:
        tracks = profile.tracks.index[(profile.tracks["section"] == unit)
                                      & (profile.tracks["kind"] == "slices")].to_numpy()
        compute, _ = stat_hits(profile, track_events(profile, tracks), "hlo_op")
        runs += [event_run(profile, compute, 0), event_run(profile, host_input, input_level)]
    return runs


def _host_of(profile: Profile, section: str) -> str:
    s = profile.sections
    return str(s["host"][s["name"] == section].iat[0])


def _op_tracks(profile: Profile, section: str) -> np.ndarray:
    t = profile.tracks
    keep = (t["section"] == section) & (t["kind"] == "slices") & ~t["name"].isin(NON_OP_LINES) \
        & ~t["line_id"].map(is_derived_line).astype(bool)  # rows drawn from the ops themselves
    return t.index[keep].to_numpy(np.int64)


def _device_classes(profile: Profile) -> np.ndarray:
    """Per metadata row, what a device op does, from its hlo_category and short name."""
    md = profile.metadata
    out = np.full(len(md), _COMPUTE, np.int8)
    device_ids = profile.sections.index[profile.sections["kind"] == "device"].to_numpy()
    names = profile.display_names
    stats = md["stats"].tolist()
    for row in np.flatnonzero(np.isin(md["section_id"].to_numpy(), device_ids)).tolist():
        category = str(stats[row].get("hlo_category", ""))
        name = names[row]
        for code, text in ((_INFEED, _INFEED_TEXT), (_H2D, _H2D_TEXT), (_D2D, _D2D_TEXT),
                           (_DEVICE_OTHER, _DEVICE_OTHER_TEXT)):
            if text.search(category) or text.search(name):
                out[row] = code
                break
    return out


def _fold_units(per_unit: pd.DataFrame) -> pd.DataFrame:
    """One row per step: the slowest unit's breakdown (units tied for slowest averaged)."""
    longest = per_unit.groupby("step")["duration_ps"].transform("max")
    slowest = per_unit[per_unit["duration_ps"] == longest]
    parts = list(STEP_PARTS)
    agg = slowest.groupby("step", sort=True).agg(
        name=("name", "first"), device=("device", "first"),
        duration_ps=("duration_ps", "first"),
        **{c: (c, "mean") for c in [*parts, "before_step_us", "input_before_step_us"]})
    agg["start_ps"] = per_unit.groupby("step", sort=True)["start_ps"].min()
    out = agg.reset_index()
    out["start_us"] = out["start_ps"] / PS_PER_US
    out["duration_us"] = out["duration_ps"] / PS_PER_US
    for column in [*parts, "before_step_us", "input_before_step_us"]:
        out[column] = out[column] / PS_PER_US
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (out["input_us"] + out["host_to_device_us"]) / out["duration_us"]
    out["input_share"] = share.where(out["duration_us"] > 0, 0.0)
    return out[STEP_COLUMNS]


# ---- intervals ---------------------------------------------------------------------------------
def _measure(a: np.ndarray, b: np.ndarray, before: np.ndarray, start: np.ndarray,
             end: np.ndarray) -> np.ndarray:
    """Length of the union (a, b) inside each [start, end)."""
    return _covered(a, b, before, end) - _covered(a, b, before, start)


def _covered(a: np.ndarray, b: np.ndarray, before: np.ndarray, t: np.ndarray) -> np.ndarray:
    if not a.shape[0]:
        return np.zeros(t.shape[0], np.int64)
    k = np.searchsorted(a, t, side="right") - 1
    inside = np.clip(np.minimum(t, b[np.maximum(k, 0)]) - a[np.maximum(k, 0)], 0, None)
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)
