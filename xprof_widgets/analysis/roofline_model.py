"""Roofline model: programs and ops against the device's compute and memory ceilings.

XProf's "roofline_model" (xprof/convert/op_stats_to_roofline_model.cc), from the HLO stats' op
rows (`analysis/hlo_stats.py`):

- program level: one row for the whole profile (step "Total"), one per step and their mean
  ("Average"); a program's FLOPs and bytes are its innermost ops' (ops that hold others, such
  as `while` and `call`, are left out of the sums), its time the device's total time;
- op level: every op of the whole profile (at most 1000, by self time);
- each of those twice, with and without infeed and outfeed ops (`include_infeed_outfeed`);
  without them, their time leaves the program's time too;
- rates and intensities as in the HLO stats; utilization of each ceiling (compute, HBM and, on
  TPU, CMEM or VMEM reads and writes where the device states their peaks); roofline
  efficiency = the highest of them; the optimal FLOP rate = the FLOP rate over that efficiency.

Steps come from the TPU cores' `Steps` lines: a step's ops are the ops that start within its
span on their core, its time is the slowest core's step time on every core (XProf's step time).

PyTorch (Kineto) traces have their own part behind the same columns (kineto/roofline.py).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .hlo_stats import hlo_stats_available, op_metrics
from .hosts import host_parts
from .kineto.roofline import ROOFLINE_MODEL
from .parts import FormatPart, first_present, present
from .roofline_rows import (
    AVERAGE,
    COLUMNS,
    SUMMED,
    TOTAL,
    RooflineModelAnalysis,
    op_rows,
    program_row,
)
from .steps import find_steps, track_events

_TPU_CORE = re.compile(r"^/device:TPU:\d+$")


def analyze_roofline_model(profile: Profile) -> RooflineModelAnalysis:
    """The roofline model of a TPU or GPU profile (see the module doc)."""
    return profile.memo(("roofline_model",), lambda: _analyze(profile))


def _analyze(profile: Profile) -> RooflineModelAnalysis:
    return (first_present(profile, FORMATS) or XSPACE).read(profile)


def xspace_roofline(profile: Profile) -> RooflineModelAnalysis:
    """XProf's roofline from the HLO stats' op rows, per step where TPU cores mark steps."""
    ops, analysis, peaks = op_metrics(profile)
    ops = ops[ops["occurrences"] > 0].reset_index(drop=True)
    total_ps = float(analysis.total_time_ps)
    per_step = _step_sums(profile, ops) if peaks.kind == "TPU" else []
    parts = []
    for with_feeds in (True, False):
        parts.append(program_row(ops, total_ps, TOTAL, with_feeds, peaks))
        parts.append(op_rows(ops, total_ps, with_feeds, peaks))
        if per_step:
            step_ops = pd.concat([s for _, s, _ in per_step], ignore_index=True)
            mean = program_row(step_ops, sum(t for _, _, t in per_step), AVERAGE, with_feeds,
                            peaks, steps=len(per_step))
            parts.append(mean)
            parts += [program_row(s, t, str(step), with_feeds, peaks) for step, s, t in per_step]
    table = pd.concat(parts, ignore_index=True)
    return RooflineModelAnalysis(table[COLUMNS], peaks, len(per_step))


def _step_sums(profile: Profile, ops: pd.DataFrame) -> list[tuple[int, pd.DataFrame, float]]:
    """Per step of the TPU `Steps` lines: (step, its ops' sums, its time on every core). Each
    host tallies its own steps (next to its events: a Dask worker for a pod); a step is summed
    over the hosts, and lasts as long as on its slowest core."""
    parts = [p.part for p in host_parts(profile, step_tally) if p.part is not None]
    if not parts:
        return []
    key_of = {k: i for i, k in enumerate(zip(ops["program_id"], ops["name"], strict=True))}
    tally = pd.concat([t for t, _, _ in parts])
    tally["op"] = [key_of.get(k, -1) for k in zip(tally["program_id"], tally["name"],
                                                  strict=True)]
    tally = tally[tally["op"] >= 0].groupby(["step", "op"]).agg(
        n=("n", "sum"), ps=("ps", "sum")).reset_index()
    spans = pd.concat([s for _, s, _ in parts]).groupby(level=0).max()
    cores = sum(c for _, _, c in parts)
    per_occurrence = ops[SUMMED].div(ops["occurrences"].clip(lower=1), axis=0)
    out = []
    for step, part in tally.groupby("step", sort=True):
        rows = ops.iloc[part["op"].to_numpy()].copy()
        n = part["n"].to_numpy(np.float64)
        rows[SUMMED] = per_occurrence.iloc[part["op"].to_numpy()].to_numpy() * n[:, None]
        rows["occurrences"] = n.astype(np.int64)
        rows["time_ps"] = rows["self_time_ps"] = part["ps"].to_numpy(np.float64)
        out.append((int(step), rows, float(spans.loc[step]) * cores))
    return out


def step_tally(profile: Profile) -> tuple[pd.DataFrame, pd.Series, int] | None:
    """One host's part: per step and op (program id, name) the runs and time of its XLA ops on
    the TPU cores, each step's longest span, and the cores counted; None without Steps lines."""
    steps = find_steps(profile)
    if steps.source != "device Steps line":
        return None
    markers = steps.markers
    markers = markers[markers["section"].map(lambda s: bool(_TPU_CORE.match(s)))]
    tracks = profile.built_tracks
    lines = tracks[(tracks["name"] == "XLA Ops") & tracks["section"].isin(
        set(markers["section"]))]
    stats = profile.metadata["stats"].to_numpy()
    counts = []
    for section, line in lines.groupby("section"):
        events = track_events(profile, line.index.to_numpy())
        mine = markers[markers["section"] == section].sort_values("start_ps")
        start = profile.start_ps[events]
        at = np.searchsorted(mine["start_ps"].to_numpy(), start, side="right") - 1
        inside = (at >= 0) & (start < mine["end_ps"].to_numpy()[np.maximum(at, 0)])
        metas = profile.meta[events[inside]]
        codes, of_event = np.unique(metas, return_inverse=True)
        pids = np.array([str(int(stats[m].get("program_id", 0) or 0) & (2**64 - 1))
                         for m in codes.tolist()], dtype=object)
        names = profile.display_names[codes].astype(str)
        counts.append(pd.DataFrame({
            "step": mine["step"].to_numpy()[at[inside]], "program_id": pids[of_event],
            "name": names[of_event], "ps": profile.duration_ps[events[inside]]}))
    if not counts:
        return None
    tally = pd.concat(counts).groupby(["step", "program_id", "name"]).agg(
        n=("ps", "size"), ps=("ps", "sum")).reset_index()
    spans = (markers["end_ps"] - markers["start_ps"]).groupby(markers["step"]).max()
    return tally, spans, len(lines["section"].unique())


def has_device_ops(profile: Profile) -> bool:
    """Whether the profile has TPU or GPU XLA ops (XProf draws no roofline for CPU runs)."""
    return hlo_stats_available(profile) and op_metrics(profile)[2].kind in ("TPU", "GPU")


XSPACE = FormatPart("xspace", has_device_ops, xspace_roofline)
FORMATS = (XSPACE, ROOFLINE_MODEL)
"""XProf's ops where the profile has them, else a PyTorch trace's (analysis/parts.py); a profile
with neither gets XSpace's answer (an empty table, or the error naming what is missing)."""


def roofline_model_available(profile: Profile) -> bool:
    """Whether the profile has TPU or GPU ops, or is a PyTorch trace whose GPU ran ops with
    FLOPs or bytes from shapes."""
    return bool(present(profile, FORMATS))
