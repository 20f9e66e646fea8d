"""Framework op stats of a PyTorch profiler (Kineto) trace: one host's part of
`framework_op_stats`.

PyTorch's ops are the trace's `cpu_op` events; they stand where XProf's framework ops do.

- host: per op name, its calls, total time and self time, as PyTorch's `key_averages()` (and its
  TensorBoard plugin) count them: duration minus the time of every event directly inside it on
  the same thread (cpu_ops, `record_function` annotations, Python functions and CUDA/HIP
  runtime and driver calls alike: checked against key_averages() on
  tests/data/torch_self_time). Runtime and driver calls (`cudaLaunchKernel`, ...) have rows of
  their own, as in key_averages(), typed by their category; annotations and Python functions
  have none, so their self time is the host's idle. A thread's time runs from its first row's
  start to its last row's end, as XProf counts a host line; idle is the rest;
- device: the GPU work each op launched, kernels, copies and sets alike, by its owner as
  Kernel Stats finds it (kineto.kernels.launch_owners: the runtime call of its `correlation`,
  then the innermost cpu_op around it on the launching thread, else annotation, else Python
  function, else the call itself). An owner that is not a cpu_op is typed by its Kineto
  category (`user_annotation`, `python_function`, `cuda_runtime`, ...). An op's occurrences
  are its launches, its time their summed durations, and its self time its share of the
  GPU's busy time (the union of its work over all streams): a stretch where k pieces of work
  run at once counts 1/k to each, so self times add up to the busy time and no share passes
  100% however many streams overlap; on one stream it is the summed durations (PyTorch's
  "Self CUDA"). Work whose launch is not in the trace stands as itself, of type "Unknown", as
  XProf lists a device op without a framework op. A GPU's time runs from its first piece of
  work's start to its last one's end; idle is that minus the busy time;
- an op's type is its namespace (`aten`, `c10d`, `autograd`, ...: the name before its first
  `::`), "Unknown" for names without one. PyTorch's ops run eagerly, so every row is "Eager".

Times are the exact picoseconds the trace states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._native.intervals import self_times
from ...profile.model import Profile
from . import CPU_OPS, KERNELS, args_of, events_of, has_category, meta_categories
from .kernels import LINKS, launch_owners

DEVICE_WORK = (*KERNELS, "gpu_memcpy", "gpu_memset", "Memcpy", "Memset")
"""Kineto's categories of GPU work an op launches (`Memcpy`, `Memset` in older traces)."""
UNKNOWN_TYPE = "Unknown"
RUNTIME = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")
"""Kineto's categories of CUDA/HIP runtime and driver calls (`Runtime`, `Driver` in older
traces): host rows of their own, as in PyTorch's key_averages()."""
HOST_CHILDREN = ("user_annotation", "python_function")
"""Host events that are children of the ops around them (PyTorch subtracts them from an op's
self time) but have no row: `record_function` annotations and `with_stack` Python functions."""


@dataclass(frozen=True)
class KinetoOps:
    """One host's op sums per side (framework_op_stats' op columns) and each side's time."""

    host: pd.DataFrame
    host_total_ps: int
    device: pd.DataFrame
    device_total_ps: int


def kineto_op_part(profile: Profile) -> KinetoOps | None:
    """The host's cpu_op and GPU work sums (see the module doc); None for a trace with neither
    (not a Kineto trace)."""
    if not has_category(profile, (*CPU_OPS, *DEVICE_WORK)):
        return None
    host, host_total = _host_side(profile)
    device, device_total = _device_side(profile, events_of(profile, DEVICE_WORK, "device"))
    return KinetoOps(host, host_total, device, device_total)


def op_type(name: str) -> str:
    """A PyTorch op's namespace as its type (`aten::mm` is of type `aten`)."""
    head, sep, _ = name.partition("::")
    return head if sep and head else UNKNOWN_TYPE


def host_self_times(profile: Profile) -> tuple[np.ndarray, ...]:
    """The host events PyTorch nests (cpu_ops, runtime calls, annotations, Python functions),
    outer before inner per thread, as (events, track, start, end, duration, self time, category):
    self time subtracts every host event directly inside (PyTorch's rule)."""
    events = events_of(profile, (*CPU_OPS, *RUNTIME, *HOST_CHILDREN), "host")
    track = profile.track_of(events).astype(np.int64)
    start = profile.start_ps[events].astype(np.int64)
    duration = profile.duration_ps[events].astype(np.int64)
    end = start + duration
    # Outer before inner: by start, the longer first, then as stored (Kineto writes the outer
    # of two equal events first).
    order = np.lexsort((events, -end, start, track))
    events, track, start, end, duration = (a[order] for a in (events, track, start, end,
                                                                duration))
    own = self_times(track, start, end, duration)
    return events, track, start, end, duration, own, meta_categories(profile)[profile.meta[events]]


def _host_side(profile: Profile) -> tuple[pd.DataFrame, int]:
    """Op sums of the cpu_ops and runtime calls, and the threads' op time (first start to last
    end per thread); only the events with rows are kept."""
    events, track, start, end, duration, own, category = host_self_times(profile)
    rows = ~np.isin(category, HOST_CHILDREN)
    if not rows.any():
        return _sums(np.empty(0, object), np.empty(0, np.int64), np.empty(0, np.int64)), 0
    events, track, start, end, duration, own, category = (
        a[rows] for a in (events, track, start, end, duration, own, category))
    names = profile.display_names[profile.meta[events]]
    spans = pd.DataFrame({"track": track, "start": start, "end": end, "own": own}).groupby(
        "track").agg(start=("start", "min"), end=("end", "max"), own=("own", "sum"))
    total = int(np.maximum(spans["end"] - spans["start"], spans["own"]).sum())
    sums = _sums(names, duration, own)
    runtime = np.isin(category, RUNTIME)
    kinds = dict(zip(names[runtime].tolist(), category[runtime].tolist(), strict=True))
    sums["type"] = [kinds.get(name, kind) for name, kind in zip(
        sums["operation"].tolist(), sums["type"].tolist(), strict=True)]
    return sums, total


def _device_side(profile: Profile, work: np.ndarray) -> tuple[pd.DataFrame, int]:
    """Sums of the GPU work by the op that launched it, and the GPUs' busy span."""
    if not work.shape[0]:
        return _sums(np.empty(0, object), np.empty(0, np.int64), np.empty(0, np.int64)), 0
    owners = launch_owners(profile, work, args_of(profile, work, LINKS))
    launched_by = owners.names[owners.code]
    own_names = profile.display_names[profile.meta[work]]
    unlaunched = launched_by == ""
    names = np.where(unlaunched, own_names, launched_by)
    duration = profile.duration_ps[work].astype(np.int64)
    start = profile.start_ps[work].astype(np.int64)
    section = profile.built_tracks["section_id"].to_numpy(np.int64)[profile.track_of(work)]
    spans = pd.DataFrame({"section": section, "start": start, "end": start + duration}).groupby(
        "section").agg(start=("start", "min"), end=("end", "max"))
    total = int((spans["end"] - spans["start"]).sum())
    shared, busy = _busy_shares(section, start, start + duration)
    sums = _sums(names, duration, np.zeros(len(names), np.int64))
    codes = pd.factorize(pd.Series(names, dtype=object))[0]
    sums["self_time_ps"] = _rounded_to(np.bincount(codes, shared, len(sums)), busy)
    standalone = set(names[unlaunched].tolist()) - set(launched_by[~unlaunched].tolist())
    sums.loc[sums["operation"].isin(standalone), "type"] = UNKNOWN_TYPE
    typed = {name: category for name, category in zip(
        owners.names.tolist(), owners.categories.tolist(), strict=True)
        if category and category not in CPU_OPS}  # annotations, Python, launch calls
    sums["type"] = [typed.get(name, kind) for name, kind in zip(
        sums["operation"].tolist(), sums["type"].tolist(), strict=True)]
    return sums, total


def _busy_shares(section: np.ndarray, start: np.ndarray, end: np.ndarray
                 ) -> tuple[np.ndarray, int]:
    """Each piece of work's share of its GPU's busy time (overlaps split evenly among the
    pieces running), and the busy time (the union over all streams) of every GPU, exact."""
    shared = np.zeros(len(start), np.float64)
    busy = 0
    for gpu in np.unique(section):
        at = np.flatnonzero(section == gpu)
        shared[at], union = _even_split(start[at], end[at])
        busy += union
    return shared, busy


def _even_split(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, int]:
    """One GPU: F(t) = the integral of 1/k over its busy time (k pieces running), so a piece
    from s to e gets F(e) - F(s); also the union's exact length."""
    points = np.concatenate([start, end])
    order = np.argsort(points, kind="stable")
    points = points[order]
    running = np.cumsum(np.concatenate([np.ones(len(start)), -np.ones(len(end))])[order])[:-1]
    lengths = np.diff(points)
    covered = running > 0.5
    per_piece = np.where(covered, lengths / np.maximum(running, 1.0), 0.0)
    integral = np.concatenate([[0.0], np.cumsum(per_piece)])
    at = np.searchsorted(points, np.concatenate([start, end]), side="left")
    return integral[at[len(start):]] - integral[at[:len(start)]], int(lengths[covered].sum())


def _rounded_to(values: np.ndarray, total: int) -> np.ndarray:
    """Whole picoseconds that sum to exactly `total` (largest remainders rounded up), as
    floats (the op columns are float ps)."""
    floor = np.floor(values).astype(np.int64)
    short = int(total - floor.sum())
    by_remainder = np.argsort(-(values - floor), kind="stable")
    if short > 0:  # float rounding left them short: the largest remainders go up
        floor[by_remainder[:short]] += 1
    elif short < 0:  # or over: the smallest remainders of nonzero values go down
        down = by_remainder[floor[by_remainder] > 0][::-1][:-short]
        floor[down] -= 1
    return floor.astype(np.float64)


def _sums(names: np.ndarray, time_ps: np.ndarray, self_ps: np.ndarray) -> pd.DataFrame:
    """Per name: occurrences, time and self time, in framework_op_stats' op columns."""
    codes, uniques = pd.factorize(pd.Series(names, dtype=object))
    n = len(uniques)
    operation = np.asarray(uniques, dtype=object)
    return pd.DataFrame({
        "operation": operation,
        "type": np.array([op_type(str(name)) for name in operation.tolist()], dtype=object),
        "occurrences": np.bincount(codes, minlength=n).astype(np.int64),
        "time_ps": _summed(codes, time_ps, n),
        "self_time_ps": _summed(codes, self_ps, n),
        "flops": 0.0, "model_flops": 0.0, "bytes_accessed": 0.0, "eager": True,
    })


def _summed(codes: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact integer sums per code, as floats (the op columns are float ps)."""
    out = np.zeros(n, np.int64)
    np.add.at(out, codes, values.astype(np.int64))
    return out.astype(np.float64)
