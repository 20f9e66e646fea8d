"""Kernel stats of a PyTorch profiler (Kineto) trace: one host's part of `kernel_stats`.

Kineto writes each GPU kernel as a `kernel` event on its GPU process with its launch parameters
as args (`registers per thread`, `shared memory`, `grid`, `block` and, in newer traces,
`blocks per SM` and `est. achieved occupancy %`); XProf's kernel stats read the same facts from
`kernel_details`.

A kernel's op is its owner (`launch_owners`, shared with Framework Op Stats' device side): the
runtime or driver call with the kernel's `correlation` is found on the launching thread, and the
innermost event around it of the first kind that has one owns the kernel:

1. a `cpu_op` (PyTorch's op);
2. else a `user_annotation` (`record_function`; its GPU copy `gpu_user_annotation` is not on the
   launching thread);
3. else a `python_function` (`with_stack`);
4. else the launch call itself (`cudaLaunchKernel`, `cuLaunchKernelEx`,
   `hipExtModuleLaunchKernel`, ...: categories cuda_runtime, cuda_driver, Runtime, Driver).

The profiler's own step marker `ProfilerStep#N` owns nothing (it is the step, not a region the
program named: it would hide every Python function under it). Only where the launch call is
missing from the trace is the kernel's `External id` looked up among the `cpu_op`s: some
PyTorch versions write a kernel's correlation there, which would name an unrelated op. Work
with neither has no owner (""). Each row keeps its owner's Kineto category (`op_category`), so
an annotation, a Python function or a launch call reads apart from a cpu_op.

Per row, Kineto-only: the mean `blocks per SM` and mean `est. achieved occupancy %` of its
kernels, weighted by duration as PyTorch's TensorBoard plugin weights them (its
kernel_parser.py), over the kernels that state them: a value the trace does not state is
missing (NaN), where the plugin counts it as 0. A kernel without `blocks per SM` but with a
`grid` gets it as Kineto computes it: the grid's blocks over its GPU's `numSms`
(`deviceProperties` of the trace header).

Durations are the exact picoseconds the trace states (Kineto's microseconds with their
fraction), so the part's `tick_ps` is 1 (XProf counts whole nanoseconds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..hosts import stacked_parts
from ..kernel_families import NO, YES, tensor_core_use
from ..parts import FormatPart
from ..tensor_core import is_op_eligible
from . import (
    CPU_OPS,
    KERNELS,
    STEP_MARKER,
    any_rank_has,
    args_of,
    events_of,
    innermost_enclosing,
    int_stat,
    meta_categories,
)

LAUNCH_CALLS = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")
"""Kineto's categories of the host calls that launch GPU work (ROCm traces use the same)."""
OWNERS = (CPU_OPS, ("user_annotation",), ("python_function",))
"""The host events that own the GPU work launched inside them, in order of preference; the
launch call itself is the last resort."""
LINKS = ("correlation", "External id", "external id")
"""The args that tie GPU work to its launch: read by `launch_owners`."""
_EXTERNAL_ID = LINKS[1:]
_MEANS = {"blocks_per_sm": "blocks per SM", "occupancy": "est. achieved occupancy %"}
"""The per-kernel facts a row averages, by duration (see the module doc)."""
_SUMS = ("weighted", "ps", "sum", "n")
MEAN_SUMS = tuple(f"{mean}_{s}" for mean in _MEANS for s in _SUMS)
"""A part's columns behind each mean, summed over kernels that state it: value x ps, ps, value,
count; rows and hosts add them up, then `weighted_means` divides."""
_LAUNCH = ("registers per thread", "shared memory", "grid", "block", *_MEANS.values(), *LINKS)
"""The kernel args read, each kernel's args decoded once."""
_TENSOR_CORE = {YES: True, NO: False}
"""A kernel's TensorCore use as the column holds it; None (absent here) where the name does not
say: kernel_families.TENSOR_CORE_FAMILIES, wider than XProf's list (Hopper wgmma, nvjet, AMD
MFMA, flash attention...) and with an unknown, where XProf's says "no"."""


@dataclass(frozen=True)
class Owners:
    """Who launched each piece of GPU work: piece k's owner is `names[code[k]]`, of Kineto
    category `categories[code[k]]` ("" and "" where none is known)."""

    names: np.ndarray
    categories: np.ndarray
    code: np.ndarray


def has_kernels(profile: Profile) -> bool:
    """Whether any rank's trace has Kineto kernels (cheap: reads no events)."""
    return any_rank_has(profile, KERNELS)


def kineto_kernel_part(profile: Profile) -> pd.DataFrame:
    """One host's part (analysis/hosts.py): a row per kind of kernel launch (name, launch
    parameters, op) with its occurrences and total/min/max ps, in the columns of
    `kernel_stats.gpu_kernel_part`, plus the owner's category and the sums behind the means
    (`weighted_means`); empty without kernels."""
    kernels = events_of(profile, KERNELS, "device")
    if not kernels.shape[0]:
        return pd.DataFrame()
    args = args_of(profile, kernels, _LAUNCH)
    grid, block = _dims(args["grid"]), _dims(args["block"])
    owners = launch_owners(profile, kernels, args)
    ps = profile.duration_ps[kernels].astype(np.int64)
    occupancy = _floats(args[_MEANS["occupancy"]])
    launches = pd.DataFrame({
        "meta": profile.meta[kernels], "registers": _ints(args["registers per thread"]),
        "shared": _ints(args["shared memory"]),
        "g0": grid[0], "g1": grid[1], "g2": grid[2], "b0": block[0], "b1": block[1],
        "b2": block[2], "op": owners.code, "occupancy": occupancy, "ps": ps})
    parts = _weighted(ps, {"blocks_per_sm": _blocks_per_sm(profile, kernels, args, grid),
                           "occupancy": occupancy})
    launches = launches.assign(**parts)
    kinds = launches.groupby(list(launches.columns[:10]), sort=False).agg(
        occupancy_pct=("occupancy", "first"), occurrences=("ps", "size"),
        total_ps=("ps", "sum"), min_ps=("ps", "min"), max_ps=("ps", "max"),
        **{c: (c, "sum") for c in parts}).reset_index()
    names = profile.metadata["name"].to_numpy(dtype=object)[kinds["meta"].to_numpy()]
    tensor_core = np.array([_TENSOR_CORE.get(tensor_core_use(str(n))) for n in names], dtype=object)
    ops = owners.names[kinds["op"].to_numpy()]
    return pd.DataFrame({
        "kernel_name": names.astype(str),
        "grid": list(zip(kinds["g0"], kinds["g1"], kinds["g2"], strict=True)),
        "block": list(zip(kinds["b0"], kinds["b1"], kinds["b2"], strict=True)),
        "registers_per_thread": kinds["registers"].to_numpy(np.int64),
        "static_shmem_bytes": kinds["shared"].to_numpy(np.int64),  # Kineto writes the sum
        "dynamic_shmem_bytes": np.zeros(len(kinds), np.int64),
        "is_kernel_using_tensor_core": tensor_core,
        "is_op_tensor_core_eligible": np.array([t is True for t in tensor_core], bool) | np.fromiter(
            (is_op_eligible(str(op)) for op in ops), bool, len(kinds)),
        "op_name": ops.astype(str),
        "occupancy_pct": kinds["occupancy_pct"].to_numpy(np.float64),
        "occurrences": kinds["occurrences"].to_numpy(np.int64),
        "total_ps": kinds["total_ps"].to_numpy(np.int64),
        "min_ps": kinds["min_ps"].to_numpy(np.int64),
        "max_ps": kinds["max_ps"].to_numpy(np.int64),
        "tick_ps": np.ones(len(kinds), np.int64),
        "op_category": owners.categories[kinds["op"].to_numpy()].astype(str),
        **{c: kinds[c].to_numpy() for c in parts},
    })


def weighted_means(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each mean of `_MEANS` per row of summed parts: weighted by duration, or plain where the
    kernels that state it lasted 0 ps in all; NaN where no kernel states it."""
    out = {}
    for mean in _MEANS:
        weighted, weight, plain, stated = (frame[f"{mean}_{s}"].to_numpy(np.float64)
                                           for s in _SUMS)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[mean] = np.where(weight > 0, weighted / weight,
                                 np.where(stated > 0, plain / stated, np.nan))
    return out


def _weighted(ps: np.ndarray, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per kernel, its terms of MEAN_SUMS (0 where it does not state the value)."""
    out = {}
    for mean, value in values.items():
        stated = ~np.isnan(value)
        terms = (np.where(stated, value * ps, 0.0), np.where(stated, ps, 0).astype(np.int64),
                 np.where(stated, value, 0.0), stated.astype(np.int64))
        out.update({f"{mean}_{s}": term for s, term in zip(_SUMS, terms, strict=True)})
    return out


def _blocks_per_sm(profile: Profile, kernels: np.ndarray, args: dict[str, np.ndarray],
                   grid: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """`blocks per SM` per kernel; where absent, the grid's blocks over the GPU's SM count (as
    Kineto computes it) when both are known; else NaN."""
    stated = _floats(args["blocks per SM"])
    missing = np.isnan(stated) & _given(args["grid"])
    if not missing.any():
        return stated
    sms = np.array([_sm_count(stats) for stats in profile.sections["stats"]], np.float64)
    section = profile.built_tracks["section_id"].to_numpy(np.int64)[
        profile.track_of(kernels[missing])]
    blocks = (grid[0] * grid[1] * grid[2])[missing].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        stated[missing] = np.where(sms[section] > 0, blocks / sms[section], np.nan)
    return stated


def _sm_count(stats: object) -> float:
    """A GPU section's `numSms` from the trace header's `deviceProperties`; NaN if unknown."""
    device = stats.get("device_properties") if isinstance(stats, dict) else None
    count = device.get("numSms") if isinstance(device, dict) else None
    return float(count) if type(count) is int else np.nan


def launch_owners(profile: Profile, work: np.ndarray, args: dict[str, np.ndarray]) -> Owners:
    """Each piece of GPU work's owner (see the module doc); `args` holds LINKS of `work`."""
    owner = np.full(work.shape[0], -1, np.int64)
    call = launch_calls(profile, args["correlation"])
    linked = np.flatnonzero(call >= 0)
    for categories in OWNERS:
        todo = linked[owner[linked] < 0]
        candidates = _owner_events(profile, categories) if todo.shape[0] else todo
        if candidates.shape[0]:
            owner[todo] = innermost_enclosing(profile, call[todo], candidates)
    owner = np.where((call >= 0) & (owner < 0), call, owner)
    missing = np.flatnonzero(call < 0)
    if missing.shape[0]:
        owner[missing] = by_external_id(profile, {n: args[n][missing] for n in _EXTERNAL_ID})
    known = owner >= 0
    names = np.where(known, profile.display_names[profile.meta[owner]], "")
    categories = np.where(known, meta_categories(profile)[profile.meta[owner]], "")
    code, uniques = pd.factorize(pd.Series(names, dtype=object))
    first = np.unique(code, return_index=True)[1]
    return Owners(np.asarray(uniques, dtype=object), categories[first].astype(object),
                  code.astype(np.int64))


def launch_calls(profile: Profile, correlation: np.ndarray) -> np.ndarray:
    """Per piece of work, the runtime or driver call with its `correlation` (the first such
    call of the trace); -1 where the trace has none."""
    out = np.full(correlation.shape[0], -1, np.int64)
    calls = events_of(profile, LAUNCH_CALLS, "host")
    has_corr, call_corr = int_stat(profile, calls, "correlation")
    calls, call_corr = calls[has_corr], call_corr[has_corr]
    if not calls.shape[0]:
        return out
    order = np.argsort(call_corr, kind="stable")
    at = np.minimum(np.searchsorted(call_corr[order], _ints(correlation)), order.shape[0] - 1)
    linked = _present(correlation) & (call_corr[order][at] == _ints(correlation))
    out[linked] = calls[order][at][linked]
    return out


def _owner_events(profile: Profile, categories: tuple[str, ...]) -> np.ndarray:
    """The host events of these categories that may own work: all but the step markers."""
    events = events_of(profile, categories, "host")
    metas = np.unique(profile.meta[events])
    steps = metas[pd.Series(profile.display_names[metas], dtype=object).astype(str).str.fullmatch(
        STEP_MARKER).to_numpy(bool)]
    return events[~np.isin(profile.meta[events], steps)]


def by_external_id(profile: Profile, ids: dict[str, np.ndarray]) -> np.ndarray:
    """The cpu_op whose External id is the work's, per piece of work; -1 where none is."""
    new, old = ids.values()
    column = np.where(_present(new), new, old)
    has_ext, external = _present(column), _ints(column)
    out = np.full(column.shape[0], -1, np.int64)
    ops = events_of(profile, CPU_OPS, "host")
    has_op_ext, op_ext = int_stat(profile, ops, *_EXTERNAL_ID)
    order = np.argsort(op_ext[has_op_ext], kind="stable")
    by_ext, ext_sorted = ops[has_op_ext][order], op_ext[has_op_ext][order]
    if ext_sorted.shape[0]:
        at = np.minimum(np.searchsorted(ext_sorted, external), ext_sorted.shape[0] - 1)
        found = has_ext & (ext_sorted[at] == external)
        out[found] = by_ext[at[found]]
    return out


def _dims(column: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kineto's `[x, y, z]` grid or block as three int columns; 1 where a dimension is missing
    or not a whole number, as XProf reads a missing dimension."""
    out = np.ones((3, column.shape[0]), np.int64)
    for k, dims in enumerate(column.tolist()):
        if isinstance(dims, list):
            for axis, value in enumerate(dims[:3]):
                if type(value) is int:
                    out[axis, k] = value
    return out[0], out[1], out[2]


def _given(column: np.ndarray) -> np.ndarray:
    """Where a `[x, y, z]` arg states all three dimensions as whole numbers."""
    return np.fromiter((isinstance(v, list) and len(v) == 3 and all(type(d) is int for d in v)
                        for v in column.tolist()), bool, column.shape[0])


def _ints(column: np.ndarray) -> np.ndarray:
    """An integer arg per kernel; 0 where it is missing or not an integer (as XProf reads a
    missing launch parameter)."""
    return np.fromiter((v if type(v) is int else 0 for v in column.tolist()), np.int64,
                       column.shape[0])


def _present(column: np.ndarray) -> np.ndarray:
    """Where an integer arg is given."""
    return np.fromiter((type(v) is int for v in column.tolist()), bool, column.shape[0])


def _floats(column: np.ndarray) -> np.ndarray:
    """A numeric arg per kernel (`est. achieved occupancy %`, `blocks per SM`); NaN where the
    trace does not say."""
    return np.fromiter((float(v) if type(v) in (int, float) else np.nan
                        for v in column.tolist()), np.float64, column.shape[0])


def kineto_kernels(profile: Profile, by_module_name: bool = True) -> pd.DataFrame:
    """Every host's `kineto_kernel_part`, host after host (`by_module_name` is XSpace's)."""
    return stacked_parts(profile, kineto_kernel_part, [])


KERNEL_STATS = FormatPart("kineto", has_kernels, kineto_kernels)
"""Kernel Stats' Kineto part (analysis/parts.py)."""
