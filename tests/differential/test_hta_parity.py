"""GPU time breakdowns against Holistic Trace Analysis (HTA 0.5), run live on the public corpus.

For every Kineto trace in tests/data/public whose events name a stream (HTA's test for GPU
work), HTA's TraceAnalysis is run on a directory holding a copy of it, as HTA's own tests load
their data, and its temporal breakdown and kernel-type breakdown are compared with ours.

HTA works in integer microseconds and rounds its percentages (kernel types to 0.1, the
temporal split to 0.01): microseconds must be equal exactly, percentages within half of HTA's
rounding unit (0.05 and 0.005 points). Every difference is a named rule of docs/from_hta.md,
applied here to our inputs so that what remains must match; none is a tolerance:

- WHOLE_MICROSECONDS: HTA reads times as float64 and, in a trace with fractional times, rounds
  each event inward (ceil of its start, floor of its end), which we do not;
- HOST_STREAM_ARG: HTA counts a host event that names a stream (Triton's launcher op) as GPU
  work; we count only work on a GPU;
- NO_EMPTY_TYPES: HTA may list a kernel type with 0 us (two edges at one instant); we do not;
- RANKS_SUMMED: HTA's kernel breakdown sums over ranks; ours is per rank.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import shutil
import tempfile
import warnings
from functools import cache
from pathlib import Path

import hta.trace_analysis as hta_analysis
import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.gpu_time import (
    GpuWork,
    gpu_work,
    kernel_breakdown,
    kernel_breakdown_table,
    kernel_type,
    time_breakdown_table,
)
from xprof_widgets.analysis.kineto import rank_of
from xprof_widgets.analysis.overview import time_breakdown

CORPUS = Path(__file__).resolve().parents[1] / "data" / "public"
PS_PER_US = 10**6
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "mtia_ccp_events")
"""Kineto's categories of work on an accelerator: a process holding them is a GPU's."""
PCT_BOUND = {"kernel": 0.05, "temporal": 0.005}
"""Half of HTA's rounding unit: it rounds kernel-type shares to 0.1, the temporal split to 0.01."""


def _read(path: Path) -> dict:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def _with_streams() -> list[Path]:
    """Kineto traces whose events name a stream: the ones HTA has GPU work in."""
    found = []
    for path in sorted(CORPUS.rglob("*.json*")):
        text = path.read_bytes()
        text = gzip.decompress(text) if text[:2] == b"\x1f\x8b" else text
        if b'"traceEvents"' in text and b'"stream"' in text:
            found.append(path)
    return found


TRACES = _with_streams()
IDS = [str(p.relative_to(CORPUS)) for p in TRACES]


@cache
def hta_results(*paths: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HTA's temporal and kernel-type breakdown (include_memory_kernels=True) of the files, as
    one job's rank files in one directory."""
    tmp = Path(tempfile.mkdtemp(prefix="hta_parity_"))
    try:
        for path in paths:
            shutil.copy(path, tmp / path.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.disable(logging.CRITICAL)
            try:
                analysis = hta_analysis.TraceAnalysis(trace_dir=str(tmp))
                temporal = analysis.get_temporal_breakdown(visualize=False)
                kinds, _ = analysis.get_gpu_kernel_breakdown(visualize=False,
                                                             include_memory_kernels=True)
            finally:
                logging.disable(logging.NOTSET)
    finally:
        shutil.rmtree(tmp)
    return temporal, kinds


# ---- the rules, applied to our inputs ------------------------------------------------------------
def whole_microseconds(profile: xw.Profile, work: GpuWork, doc: dict) -> GpuWork:
    """WHOLE_MICROSECONDS: each event's [start, end) as HTA holds it. A trace whose `ts` values
    include a fraction is a float64 column in HTA, rounded inward per event: ceil(ts) and
    floor(ts + dur) in float64 arithmetic, from the file's own ts (before baseTimeNanoseconds
    is added); otherwise every time is already a whole microsecond and nothing changes."""
    offset = profile.origin_ps - int(doc.get("baseTimeNanoseconds", 0)) * 1000
    if not any(type(e.get("ts")) is float for e in doc["traceEvents"] if isinstance(e, dict)):
        whole_us, rest = divmod(offset, PS_PER_US)  # epoch ps overflow int64: split them
        start, end = work.start + rest, work.end + rest
        assert not (start % PS_PER_US).any() and not (end % PS_PER_US).any()
        return GpuWork(work.rank, start // PS_PER_US + whole_us, end // PS_PER_US + whole_us,
                       work.kernel_type)
    start, end = [], []
    for begin, finish in zip(work.start.tolist(), work.end.tolist(), strict=True):
        ts = (begin + offset) / PS_PER_US  # the double json reads: both correctly rounded
        start.append(math.ceil(ts))
        end.append(math.floor(ts + (finish - begin) / PS_PER_US))
    return GpuWork(work.rank, np.asarray(start, np.int64), np.asarray(end, np.int64),
                   work.kernel_type)


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


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_breakdowns_equal_hta_under_its_rules(path):
    """With HTA's rules applied to our GPU work, every microsecond matches it."""
    profile, doc = xw.open_profile(path), _read(path)
    work = as_hta_sees(profile, doc)
    assert work.start.shape[0], "a trace with a stream but no GPU work for either"
    temporal, kinds = hta_results(path)
    assert_temporal_equal(time_breakdown_table([work], per_us=1), temporal)
    assert_kinds_equal(kernel_breakdown_table([work], per_us=1), kinds)


WHOLE_US = [p for p in TRACES if not any(
    type(e.get("ts")) is float for e in _read(p)["traceEvents"] if isinstance(e, dict))
    and not host_stream_events(_read(p))]


@pytest.mark.parametrize("path", WHOLE_US, ids=[str(p.relative_to(CORPUS)) for p in WHOLE_US])
def test_whole_microsecond_traces_need_no_rule(path):
    """Where a trace's times are whole microseconds and only GPUs name streams, our public
    answers (exact picoseconds) are HTA's with no rule applied."""
    profile = xw.open_profile(path)
    temporal, kinds = hta_results(path)
    assert_temporal_equal(time_breakdown(profile), temporal)
    assert_kinds_equal(kernel_breakdown(profile), kinds)


def test_ranks_of_one_job():
    """Two rank files of one job in one directory: per-rank temporal rows, kernel types summed
    over the ranks (RANKS_SUMMED), ranks read from distributedInfo as HTA reads them."""
    folder = CORPUS / "hta" / "trace_filter"
    paths = sorted(folder.glob("*.json.gz"))
    profile = xw.open_profile(folder)
    temporal, kinds = hta_results(*paths)
    assert sorted(rank_of(p) for p in profile.per_host()) == [0, 1]
    assert_temporal_equal(time_breakdown(profile), temporal)
    assert_kinds_equal(kernel_breakdown(profile), kinds)
    assert kernel_breakdown(profile)["rank"].unique().tolist() == [0, 1]


def test_nccl_trace_as_hta_reports_it():
    """The figures HTA 0.5 prints for nccl_data.json.gz: idle 77.78%, compute 17.26%,
    non-compute 4.97%; computation 74.1%, communication 21.3%, computation overlapping
    communication 3.6%, memory 0.9%, communication overlapping memory 0.2%."""
    path = CORPUS / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
    work = as_hta_sees(xw.open_profile(path), _read(path))
    temporal = time_breakdown_table([work], per_us=1).iloc[0]
    assert [round(temporal[c], 2) for c in ("idle_pct", "compute_pct", "non_compute_pct")] == [
        77.78, 17.26, 4.97]
    kinds = kernel_breakdown_table([work], per_us=1)
    assert dict(zip(kinds["kernel_type"], kinds["percentage"].round(1), strict=True)) == {
        "COMPUTATION": 74.1, "COMMUNICATION": 21.3,
        "COMPUTATION overlapping COMMUNICATION": 3.6, "MEMORY": 0.9,
        "COMMUNICATION overlapping MEMORY": 0.2}
