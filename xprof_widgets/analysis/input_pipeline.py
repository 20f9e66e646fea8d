"""Input pipeline analysis: how much of each step waits for input, and what the input costs.

Device side, per step (steps from `steps.find_steps`), the step breakdown (step_breakdown.py:
one split of each step for every tool). A step's input share is (waiting for input + host to
device) / step time, as in XProf; the profile's share is that total over all steps' time:
>= 20% HIGHLY, >= 5% MODERATELY, else NOT input-bound. On a multi-chip profile a step lasts as
long as its slowest chip and is broken down on that chip.

The steps are those XProf's Input Pipeline counts (steps.py): `left_out_steps` lists the steps
found but left out, with the reason (no compute inside the marker, `steps.ill_formed`; the
first or last of a host-marked run of more than 5 steps, `steps.edge_steps`). PyTorch traces
keep every `ProfilerStep#N`.

Host side, the input operations of input_events.py, by self time: an op's time minus that of
input ops nested in it. The advice names the framework's own tools: tf.data and grain for
XProf profiles, the DataLoader's arguments for PyTorch (Kineto) traces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .._native.intervals import self_times as _self_times
from ..profile.model import PS_PER_US, Profile
from .hosts import HostPart, host_parts
from .input_events import (
    ADVANCED,
    DEFAULT_INPUT_PATTERN,
    DEMANDED,
    ENQUEUE,
    HOST_CATEGORIES,
    OTHER_INPUT,
    PREPROCESSING,
    HostEvents,
    host_input_events,
    op_names,
)
from .step_breakdown import (
    COLUMNS,
    NON_OP_LINES,  # noqa: F401 - read by pod/busy.py
    breakdown_part,
    on_whole_timeline,
)
from .step_intersection import common_steps
from .steps import HOW_TO_MARK, LEFT_OUT_COLUMNS, Steps, edge_steps

HIGHLY, MODERATELY, NOT = "HIGHLY", "MODERATELY", "NOT"
HIGHLY_PCT, MODERATELY_PCT = 20.0, 5.0
STEP_PARTS = COLUMNS
"""Per-step time columns: the step breakdown's categories (step_breakdown.py), in the order
an instant is claimed."""
STEP_COLUMNS = ["step", "name", "start_us", "duration_us", *STEP_PARTS, "input_share", "device",
                "before_step_us", "input_before_step_us"]
"""A host-marked step's period starts where the step before it ended (steps.py): before_step_us
is the part before its own marker, input_before_step_us the input time in that part (a loader's
`__next__` between step annotations); both are 0 for device steps."""
OP_COLUMNS = ["input_op", "count", "total_time_ms", "total_time_pct", "self_time_ms",
              "self_time_pct", "category"]

_TF_OP = re.compile(r"[^:]+:[A-Z]\w*")


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
    """What wrote the profile (profile/framework.py), so the advice names its own annotation."""
    left_out_steps: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["host", *LEFT_OUT_COLUMNS]))
    """Steps found but not counted, as XProf (steps.ill_formed, steps.edge_steps): host, step,
    name, reason."""

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
        host = self.host_advice()
        verdict = self.verdict
        if verdict is None:
            return f"No steps were found, so step time cannot be split. {host}"
        pct = 100 * self.input_share
        if verdict == NOT:
            return (f"Your program is NOT input-bound: {pct:.1f}% of step time waits for input. "
                    f"Look at {_NEXT_TOOL.get(self.framework, _NEXT_TOOL[None])} instead. " + host)
        return (f"Your program is {verdict} input-bound: {pct:.1f}% of step time waits for "
                f"input. {host}")

    def host_advice(self) -> str:
        """The largest host-side input cost, its costliest op and what to do about it, in the
        words of the framework that wrote the profile; how to see input ops when none were
        found."""
        largest = self.largest_host_cost()
        if largest is None:
            host = ("No input operations were found on the host. Wrap the parts of your input "
                    f"pipeline in {annotation(self.framework)} (names starting with load_, "
                    "read_, preprocess_, input_, ...) or pass input_pattern= to see where input "
                    "time goes.")
        else:
            category, share, op = largest
            advice = _advice(self.framework)[category].format(
                annotation=annotation(self.framework))
            host = (f"The largest host-side input cost is {category} ({100 * share:.0f}% of "
                    f"input-op self time, mostly {op!r}): {advice}")
        return host

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
_TORCH_ADVICE = {
    ENQUEUE: "copies to the GPU dominate; load into pinned memory (DataLoader(pin_memory=True)) "
             "and copy with tensor.to(device, non_blocking=True) so copies overlap compute, "
             "in fewer, larger batches.",
    DEMANDED: "the step waits while the DataLoader makes the next batch; load it in worker "
              "processes (DataLoader(num_workers=..., pin_memory=True)), keep them between "
              "epochs (persistent_workers=True) and let each read batches ahead "
              "(prefetch_factor).",
    ADVANCED: "the DataLoader's workers read ahead but not fast enough; add workers "
              "(num_workers), raise prefetch_factor, or cache the dataset on faster storage.",
    PREPROCESSING: "move transforms into the DataLoader's workers (num_workers=...), batch "
                   "them on the GPU after the copy, or preprocess once offline.",
    OTHER_INPUT: "annotate the parts of this input code with {annotation} to see which one is "
                 "slow, then run it in DataLoader workers (num_workers) or read ahead "
                 "(prefetch_factor).",
}
"""The same advice in PyTorch's terms (torch.utils.data.DataLoader's arguments)."""


def _advice(framework: str | None) -> dict[str, str]:
    """The advice per host category in the words of the framework that wrote the profile."""
    return _TORCH_ADVICE if framework == "PyTorch" else _ADVICE


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
    from ..profile.framework import framework

    analysis = combine_input_parts(host_parts(profile, input_pipeline_part, input_pattern),
                                   input_pattern)
    return replace(analysis, framework=framework(profile))


@dataclass(frozen=True)
class InputPipelinePart:
    """One host's part (analysis/hosts.py), in that host's frame: its step markers, one row per
    step and unit (device, or host thread of a CPU-only run) before the units are folded, and
    its input ops' raw sums (count, total and self time in ps), and the steps left out."""

    steps: Steps
    unit_steps: pd.DataFrame
    op_sums: pd.DataFrame
    left_out: pd.DataFrame


def input_pipeline_part(profile: Profile, input_pattern: str) -> InputPipelinePart:
    """The input pipeline's per-host part of `profile` (one host); made once per profile."""
    return profile.memo(("input_pipeline_part", input_pattern),
                        lambda: _part(profile, input_pattern))


def _part(profile: Profile, input_pattern: str) -> InputPipelinePart:
    breakdown = breakdown_part(profile, input_pattern)
    host = host_input_events(profile, breakdown.steps, input_pattern)
    rows, left_out = breakdown.rows, breakdown.left_out
    if breakdown.xprof_rule:  # XProf's Input Pipeline leaves out the ends of a long run
        ends = edge_steps(rows.drop_duplicates("step")[["step", "name"]])
        rows = rows[~rows["step"].isin(ends["step"])].reset_index(drop=True)
        left_out = pd.concat([left_out, ends], ignore_index=True).sort_values(
            "step", kind="stable").reset_index(drop=True)
    return InputPipelinePart(breakdown.steps, rows, _op_sums(profile, host), left_out)


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
    left_out = pd.concat([p.part.left_out.assign(host=p.host)[["host", *LEFT_OUT_COLUMNS]]
                          for p in parts], ignore_index=True)
    return InputPipelineAnalysis(_step_table(unit_steps), ops, breakdown, steps, input_pattern,
                                 left_out_steps=left_out)


def _on_whole_timeline(part: HostPart[InputPipelinePart]) -> pd.DataFrame:
    """A host's unit rows on the whole profile's timeline, units named with their host."""
    return on_whole_timeline(part.part.unit_steps, part.host, part.shift_ps)


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


def _op_label(name: str) -> str:
    """TensorFlow ops are written `name:Type`; the table shows the name, as XProf does."""
    return name.rsplit(":", 1)[0] if _TF_OP.fullmatch(name) else name


def _op_sums(profile: Profile, host: HostEvents) -> pd.DataFrame:
    """count, total and self time (ps) per input op and category."""
    ops = ~host.is_wait
    events = host.events[ops]
    start = profile.start_ps[events]
    duration = profile.duration_ps[events]
    self_ps = _self_times(profile.track_of(events), start, start + duration, duration)
    labels = np.array([_op_label(n) for n in op_names(profile).tolist()], dtype=object)
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


_STEP_DTYPES = {"step": np.int64, "name": object, "device": object}


def _fold_units(per_unit: pd.DataFrame) -> pd.DataFrame:
    """One row per step: the slowest unit's breakdown (units tied for slowest averaged)."""
    longest = per_unit.groupby("step")["duration_ps"].transform("max")
    slowest = per_unit[per_unit["duration_ps"] == longest]
    times = {**{c: c for c in STEP_PARTS}, "before_step_us": "before_step_ps",
             "input_before_step_us": "before_input_us"}  # ours: the breakdown's ps columns
    agg = slowest.groupby("step", sort=True).agg(
        name=("name", "first"), device=("device", "first"),
        duration_ps=("duration_ps", "first"),
        **{ours: (theirs, "mean") for ours, theirs in times.items()})
    agg["start_ps"] = per_unit.groupby("step", sort=True)["start_ps"].min()
    out = agg.reset_index()
    out["start_us"] = out["start_ps"] / PS_PER_US
    out["duration_us"] = out["duration_ps"] / PS_PER_US
    for column in times:
        out[column] = out[column] / PS_PER_US
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (out["input_us"] + out["host_to_device_us"]) / out["duration_us"]
    out["input_share"] = share.where(out["duration_us"] > 0, 0.0)
    return out[STEP_COLUMNS]


