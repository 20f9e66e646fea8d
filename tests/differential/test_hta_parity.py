"""GPU time breakdowns against Holistic Trace Analysis (HTA 0.5), run live on the public corpus.

For every Kineto trace in tests/data/public whose events name a stream (HTA's test for GPU
work), HTA's TraceAnalysis is run on a directory holding a copy of it, as HTA's own tests load
their data, and its temporal breakdown, kernel-type breakdown, communication-computation
overlap and idle time breakdown (every rank) are compared with ours.

HTA works in integer microseconds and rounds its percentages (kernel types to 0.1, the
temporal split, the overlap and the idle shares to 0.01): microseconds must be equal exactly,
percentages within half of HTA's rounding unit (0.05 and 0.005 points, 0.005 of a ratio). Every difference is a named rule of docs/from_hta.md,
applied here to our inputs so that what remains must match; none is a tolerance:

- WHOLE_MICROSECONDS: HTA reads times as float64 and, in a trace with fractional times, rounds
  each event inward (ceil of its start, floor of its end), which we do not;
- HOST_STREAM_ARG: HTA counts a host event that names a stream (Triton's launcher op) as GPU
  work; we count only work on a GPU;
- NO_EMPTY_TYPES: HTA may list a kernel type with 0 us (two edges at one instant); we do not;
- RANKS_SUMMED: HTA's kernel breakdown sums over ranks; ours is per rank;
- ALL_IDLE_CATEGORIES: HTA lists an idle category of a stream only where some gap fell in it;
  we list all three (0 us where none did);
- LAUNCH_AT_ROW_ZERO: HTA takes the launch of a kernel whose launch call is missing from the
  trace to be its row 0 (the file's first complete event), so the gap before it is host wait
  whenever that event starts after the previous kernel ended; we count such a gap by its length
  alone;
- NO_GPU_WORK: on a Kineto trace without GPU work (a CPU-only run), HTA's temporal and idle
  breakdowns raise and its overlap is one NaN row; all four of ours are empty tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from references import hta_on, read_json, traces_holding

import xprof_widgets as xw
from xprof_widgets.analysis.kineto import int_stat, meta_categories, rank_of
from xprof_widgets.analysis.kineto.gpu_time import (
    STREAM_CATEGORIES,
    GpuWork,
    StreamKernels,
    comm_comp_overlap,
    gpu_work,
    gpu_work_streams,
    idle_table,
    idle_time_breakdown,
    kernel_breakdown,
    kernel_breakdown_table,
    kernel_type,
    overlap_table,
    stream_kernels,
    time_breakdown_table,
)
from xprof_widgets.analysis.kineto.overview import time_breakdown

CORPUS = Path(__file__).resolve().parents[1] / "data" / "public"
PS_PER_US = 10**6
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "mtia_ccp_events")
"""Kineto's categories of work on an accelerator: a process holding them is a GPU's."""
PCT_BOUND = {"kernel": 0.05, "temporal": 0.005, "overlap": 0.005, "idle_ratio": 0.005}
"""Half of HTA's rounding unit: it rounds kernel-type shares to 0.1, the temporal split and the
overlap to 0.01 points, idle ratios to 0.01."""


TRACES = traces_holding(CORPUS, b'"traceEvents"', b'"stream"')
"""Kineto traces whose events name a stream: the ones HTA has GPU work in."""
IDS = [str(p.relative_to(CORPUS)) for p in TRACES]


CPU_ONLY = traces_holding(CORPUS.parent, b'"traceEvents"', b'"cpu_op"', lacking=b'"stream"')
"""Kineto traces under tests/data with CPU ops but no event naming a stream."""


@dataclass(frozen=True)
class HtaResults:
    """HTA's four tables for one job."""

    temporal: pd.DataFrame
    kinds: pd.DataFrame
    overlap: pd.DataFrame
    idle: pd.DataFrame


@cache
def hta_results(*paths: Path) -> HtaResults:
    """HTA's temporal breakdown, kernel-type breakdown (include_memory_kernels=True),
    communication-computation overlap and idle time breakdown (of every rank) of the files, as
    one job's rank files in one directory."""
    with hta_on(*paths) as analysis:
        temporal = analysis.get_temporal_breakdown(visualize=False)
        kinds, _ = analysis.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
        overlap = analysis.get_comm_comp_overlap(visualize=False)
        idle, _ = analysis.get_idle_time_breakdown(ranks=sorted(analysis.t.traces),
                                                   visualize=False)
    return HtaResults(temporal, kinds, overlap, idle)


# ---- the rules, applied to our inputs ------------------------------------------------------------
def has_fractional_times(doc: dict) -> bool:
    """Whether any `ts` has a fraction, which makes HTA's time columns float64."""
    return any(type(e.get("ts")) is float for e in doc["traceEvents"] if isinstance(e, dict))


def hta_interval_us(profile: xw.Profile, doc: dict, start: np.ndarray, end: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """WHOLE_MICROSECONDS: each [start, end) (ps on our timeline) as HTA holds it. A trace whose
    `ts` values include a fraction is a float64 column in HTA, rounded inward per event:
    ceil(ts) and floor(ts + dur) in float64 arithmetic, from the file's own ts (before
    baseTimeNanoseconds is added); otherwise every time is already a whole microsecond and
    nothing changes."""
    offset = profile.origin_ps - int(doc.get("baseTimeNanoseconds", 0)) * 1000
    if not has_fractional_times(doc):
        whole_us, rest = divmod(offset, PS_PER_US)  # epoch ps overflow int64: split them
        start, end = start + rest, end + rest
        assert not (start % PS_PER_US).any() and not (end % PS_PER_US).any()
        return start // PS_PER_US + whole_us, end // PS_PER_US + whole_us
    lo, hi = [], []
    for begin, finish in zip(start.tolist(), end.tolist(), strict=True):
        ts = (begin + offset) / PS_PER_US  # the double json reads: both correctly rounded
        lo.append(math.ceil(ts))
        hi.append(math.floor(ts + (finish - begin) / PS_PER_US))
    return np.asarray(lo, np.int64), np.asarray(hi, np.int64)


def whole_microseconds(profile: xw.Profile, work: GpuWork, doc: dict) -> GpuWork:
    """WHOLE_MICROSECONDS on GPU work."""
    start, end = hta_interval_us(profile, doc, work.start, work.end)
    return replace(work, start=start, end=end)


def launch_at_row_zero(profile: xw.Profile, doc: dict, kernels: StreamKernels) -> StreamKernels:
    """LAUNCH_AT_ROW_ZERO: a kernel with a correlation whose launch is not in the trace
    launched, as HTA joins it (its index_correlation 0 names HTA's row 0), at the start of the
    file's first complete event, on our timeline (as stream_kernels picks the kernels)."""
    first = next(e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X")
    row_zero = (int(Decimal(str(first["ts"])) * PS_PER_US)
                + int(doc.get("baseTimeNanoseconds", 0)) * 1000 - profile.origin_ps)
    events, _ = gpu_work_streams(profile)
    events = events[np.isin(meta_categories(profile)[profile.meta[events]], STREAM_CATEGORIES)]
    has_correlation, _ = int_stat(profile, events, "correlation")
    launch = np.where(kernels.launched, kernels.launch, row_zero)
    return replace(kernels, launch=launch, launched=kernels.launched | has_correlation)


def kernels_as_hta_sees(profile: xw.Profile, doc: dict) -> StreamKernels:
    """LAUNCH_AT_ROW_ZERO, then WHOLE_MICROSECONDS on the kernels of the idle breakdown and on
    their launches (a launch is an instant: the ceiling of its ts)."""
    kernels = launch_at_row_zero(profile, doc, stream_kernels(profile))
    start, end = hta_interval_us(profile, doc, kernels.start, kernels.end)
    launch, _ = hta_interval_us(profile, doc, kernels.launch, kernels.launch)
    return replace(kernels, start=start, end=end, launch=launch)


def host_stream_events(doc: dict) -> list[dict]:
    """HOST_STREAM_ARG: host events (not on a GPU process) with a stream arg HTA reads as an
    integer other than -1, and a dur, which HTA counts as GPU work (in traces of fewer than two
    profiler steps; with more, its step filter drops them as it keeps only launched work)."""
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    device_pids = {e.get("pid") for e in events if e.get("cat") in GPU_CATEGORIES}
    steps = {e.get("name") for e in events if "ProfilerStep" in str(e.get("name"))}
    if len(steps) >= 2:
        return []
    out = []
    for e in events:
        stream = (e.get("args") or {}).get("stream")
        if e.get("pid") in device_pids or stream is None or "dur" not in e:
            continue
        try:
            if int(stream) != -1:
                out.append(e)
        except ValueError:
            continue
    return out


def as_hta_sees(profile: xw.Profile, doc: dict) -> GpuWork:
    """Our GPU work with HTA's rules applied: what must then match HTA exactly."""
    work = whole_microseconds(profile, gpu_work(profile), doc)
    extra = host_stream_events(doc)
    if not extra:
        return work
    start = [math.ceil(e["ts"]) for e in extra]  # rounded as WHOLE_MICROSECONDS rounds
    end = [math.floor(e["ts"] + e["dur"]) for e in extra]
    return GpuWork(work.rank, np.concatenate([work.start, np.asarray(start, np.int64)]),
                   np.concatenate([work.end, np.asarray(end, np.int64)]),
                   np.concatenate([work.kernel_type, np.array(
                       [kernel_type(e["name"]) for e in extra], dtype=object)]))


def no_empty_types(kinds: pd.DataFrame) -> pd.DataFrame:
    """NO_EMPTY_TYPES: HTA's rows that hold time."""
    return kinds[kinds["sum"] > 0].reset_index(drop=True)


# ---- the comparisons ------------------------------------------------------------------------------
def assert_temporal_equal(ours: pd.DataFrame, hta: pd.DataFrame) -> None:
    hta = hta.sort_values("rank").reset_index(drop=True)
    ours = ours.sort_values("rank").reset_index(drop=True)
    assert ours["rank"].tolist() == hta["rank"].tolist()
    for mine, theirs in (("idle_us", "idle_time(us)"), ("compute_us", "compute_time(us)"),
                         ("non_compute_us", "non_compute_time(us)"),
                         ("kernel_us", "kernel_time(us)")):
        assert ours[mine].tolist() == hta[theirs].astype(np.float64).tolist(), mine
    for mine, theirs in (("idle_pct", "idle_time_pctg"), ("compute_pct", "compute_time_pctg"),
                         ("non_compute_pct", "non_compute_time_pctg")):
        gap = np.abs(ours[mine].to_numpy() - hta[theirs].to_numpy(np.float64))
        assert (gap <= PCT_BOUND["temporal"] + 1e-9).all(), (mine, gap)


def assert_kinds_equal(ours: pd.DataFrame, hta: pd.DataFrame) -> None:
    """RANKS_SUMMED: our per-rank rows added up by type, as HTA reports them."""
    summed = ours.groupby("kernel_type")["total_us"].sum()
    share = 100 * summed / summed.sum()
    hta = no_empty_types(hta).set_index("kernel_type")
    assert sorted(summed.index) == sorted(hta.index)
    for kind in hta.index:
        assert summed[kind] == float(hta.at[kind, "sum"]), kind
        assert abs(share[kind] - hta.at[kind, "percentage"]) <= PCT_BOUND["kernel"] + 1e-9, kind


def assert_overlap_equal(ours: pd.DataFrame, hta: pd.DataFrame) -> None:
    """The share NaN where HTA's is (a rank without communication), else within its rounding."""
    hta = hta.sort_values("rank").reset_index(drop=True)
    ours = ours.sort_values("rank").reset_index(drop=True)
    assert ours["rank"].tolist() == hta["rank"].tolist()
    mine = ours["comp_comm_overlap_pctg"].to_numpy(np.float64)
    theirs = hta["comp_comm_overlap_pctg"].to_numpy(np.float64)
    assert (np.isnan(mine) == np.isnan(theirs)).all(), (mine, theirs)
    gap = np.abs(mine - theirs)[~np.isnan(theirs)]
    assert (gap <= PCT_BOUND["overlap"] + 1e-9).all(), (mine, theirs)


def assert_idle_equal(ours: pd.DataFrame, hta: pd.DataFrame) -> None:
    """ALL_IDLE_CATEGORIES: our rows HTA lacks hold 0 us; the others equal HTA's microseconds,
    ratios NaN where HTA's are, else within its rounding."""
    keys = ["rank", "stream", "idle_category"]
    both = ours.merge(hta, on=keys, how="outer", indicator=True)
    assert (both["_merge"] != "right_only").all(), both[both["_merge"] == "right_only"]
    extra = both[both["_merge"] == "left_only"]
    assert (extra["idle_time_us"] == 0).all(), extra
    shared = both[both["_merge"] == "both"]
    assert shared["idle_time_us"].tolist() == shared["idle_time"].astype(np.float64).tolist()
    mine = shared["idle_time_ratio_x"].to_numpy(np.float64)
    theirs = shared["idle_time_ratio_y"].to_numpy(np.float64)
    assert (np.isnan(mine) == np.isnan(theirs)).all(), shared
    assert (np.abs(mine - theirs)[~np.isnan(theirs)] <= PCT_BOUND["idle_ratio"] + 1e-9).all(), \
        shared


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_breakdowns_equal_hta_under_its_rules(path):
    """With HTA's rules applied to our GPU work, every microsecond matches it."""
    profile, doc = xw.open_profile(path), read_json(path)
    work = as_hta_sees(profile, doc)
    assert work.start.shape[0], "a trace with a stream but no GPU work for either"
    hta = hta_results(path)
    assert_temporal_equal(time_breakdown_table([work], per_us=1), hta.temporal)
    assert_kinds_equal(kernel_breakdown_table([work], per_us=1), hta.kinds)
    assert_overlap_equal(overlap_table([work], per_us=1), hta.overlap)
    assert_idle_equal(idle_table([kernels_as_hta_sees(profile, doc)], per_us=1), hta.idle)


def launches_at_row_zero_matter(path: Path) -> bool:
    """Whether LAUNCH_AT_ROW_ZERO changes the trace's idle breakdown."""
    profile, doc = xw.open_profile(path), read_json(path)
    kernels = stream_kernels(profile)
    return not idle_table([kernels]).equals(
        idle_table([launch_at_row_zero(profile, doc, kernels)]))


WHOLE_US = [p for p in TRACES if not has_fractional_times(read_json(p))
            and not host_stream_events(read_json(p)) and not launches_at_row_zero_matter(p)]


@pytest.mark.parametrize("path", WHOLE_US, ids=[str(p.relative_to(CORPUS)) for p in WHOLE_US])
def test_whole_microsecond_traces_need_no_rule(path):
    """Where a trace's times are whole microseconds and only GPUs name streams, our public
    answers (exact picoseconds) are HTA's with no rule applied but ALL_IDLE_CATEGORIES (traces
    where LAUNCH_AT_ROW_ZERO matters are left to the test above)."""
    profile = xw.open_profile(path)
    hta = hta_results(path)
    assert_temporal_equal(time_breakdown(profile), hta.temporal)
    assert_kinds_equal(kernel_breakdown(profile), hta.kinds)
    assert_overlap_equal(comm_comp_overlap(profile), hta.overlap)
    assert_idle_equal(idle_time_breakdown(profile), hta.idle)


@pytest.mark.parametrize("path", CPU_ONLY, ids=[str(p.relative_to(CORPUS.parent))
                                                for p in CPU_ONLY])
def test_cpu_only_traces_have_no_breakdowns(path):
    """NO_GPU_WORK: where HTA finds no GPU work (it raises, or answers NaN), ours are empty."""
    with hta_on(path) as analysis:
        kinds, _ = analysis.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
        overlap = analysis.get_comm_comp_overlap(visualize=False)
        with pytest.raises(IndexError):
            analysis.get_temporal_breakdown(visualize=False)
        with pytest.raises((ValueError, KeyError)):  # nothing on a stream to split
            analysis.get_idle_time_breakdown(visualize=False)
    assert kinds.empty and overlap["comp_comm_overlap_pctg"].isna().all()
    profile = xw.open_profile(path)
    for ours in (time_breakdown(profile), kernel_breakdown(profile),
                 comm_comp_overlap(profile), idle_time_breakdown(profile)):
        assert ours.empty, ours


def test_ranks_of_one_job():
    """Two rank files of one job in one directory: per-rank temporal, overlap and idle rows,
    kernel types summed over the ranks (RANKS_SUMMED), ranks read from distributedInfo as HTA
    reads them."""
    folder = CORPUS / "hta" / "trace_filter"
    paths = sorted(folder.glob("*.json.gz"))
    profile = xw.open_profile(folder)
    hta = hta_results(*paths)
    assert sorted(rank_of(p) for p in profile.per_host()) == [0, 1]
    assert_temporal_equal(time_breakdown(profile), hta.temporal)
    assert_kinds_equal(kernel_breakdown(profile), hta.kinds)
    assert_overlap_equal(comm_comp_overlap(profile), hta.overlap)
    assert_idle_equal(idle_time_breakdown(profile), hta.idle)
    assert kernel_breakdown(profile)["rank"].unique().tolist() == [0, 1]
    assert idle_time_breakdown(profile)["rank"].unique().tolist() == [0, 1]


def test_nccl_trace_as_hta_reports_it():
    """The figures HTA 0.5 prints for nccl_data.json.gz: idle 77.78%, compute 17.26%,
    non-compute 4.97%; computation 74.1%, communication 21.3%, computation overlapping
    communication 3.6%, memory 0.9%, communication overlapping memory 0.2%; 14.31% of
    communication overlapping computation; host wait 357247 us and kernel wait 2155 us on
    stream 7, host wait 381499 us on stream 40."""
    path = CORPUS / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
    profile, doc = xw.open_profile(path), read_json(path)
    work = as_hta_sees(profile, doc)
    temporal = time_breakdown_table([work], per_us=1).iloc[0]
    assert [round(temporal[c], 2) for c in ("idle_pct", "compute_pct", "non_compute_pct")] == [
        77.78, 17.26, 4.97]
    kinds = kernel_breakdown_table([work], per_us=1)
    assert dict(zip(kinds["kernel_type"], kinds["percentage"].round(1), strict=True)) == {
        "COMPUTATION": 74.1, "COMMUNICATION": 21.3,
        "COMPUTATION overlapping COMMUNICATION": 3.6, "MEMORY": 0.9,
        "COMMUNICATION overlapping MEMORY": 0.2}
    assert round(overlap_table([work], per_us=1)["comp_comm_overlap_pctg"].iat[0], 2) == 14.31
    idle = idle_table([kernels_as_hta_sees(profile, doc)], per_us=1)
    assert {(s, c): t for s, c, t in idle[["stream", "idle_category", "idle_time_us"]]
            .itertuples(index=False) if t} == {(7, "host_wait"): 357247.0,
                                               (7, "kernel_wait"): 2155.0,
                                               (40, "host_wait"): 381499.0}
