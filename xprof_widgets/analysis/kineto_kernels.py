"""Kernel stats of a PyTorch profiler (Kineto) trace: one host's part of `kernel_stats`.

Kineto writes each GPU kernel as a `kernel` event on its GPU process with its launch parameters
as args (`registers per thread`, `shared memory`, `grid`, `block` and, since 2021,
`est. achieved occupancy %`); XProf's kernel stats read the same facts from `kernel_details`.
A kernel's op is the CPU op that launched it: the innermost `cpu_op` around the runtime call
that shares the kernel's `correlation`. Only where that call is missing from the trace is the
kernel's `External id` looked up among the `cpu_op`s: some PyTorch versions write a kernel's
correlation there, which would name an unrelated op.

Durations are the exact picoseconds the trace states (Kineto's microseconds with their
fraction), so the part's `tick_ps` is 1 (XProf counts whole nanoseconds).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .kernel_families import NO, YES, tensor_core_use
from .kineto import (
    CPU_OPS,
    KERNELS,
    args_of,
    events_of,
    innermost_enclosing,
    int_stat,
    meta_categories,
)
from .tensor_core import is_op_eligible

_EXTERNAL_ID = ("External id", "external id")
_LAUNCH = ("registers per thread", "shared memory", "grid", "block", "est. achieved occupancy %",
           "correlation", *_EXTERNAL_ID)
"""The kernel args read, each kernel's args decoded once."""
_TENSOR_CORE = {YES: True, NO: False}
"""A kernel's TensorCore use as the column holds it; None (absent here) where the name does not
say: kernel_families.TENSOR_CORE_FAMILIES, wider than XProf's list (Hopper wgmma, nvjet, AMD
MFMA, flash attention...) and with an unknown, where XProf's says "no"."""


def kineto_kernel_part(profile: Profile) -> pd.DataFrame:
    """A row per kind of kernel launch (name, launch parameters, op) with its occurrences and
    total/min/max ps, in the columns of `kernel_stats.gpu_kernel_part`; empty without kernels."""
    kernels = events_of(profile, KERNELS, "device")
    if not kernels.shape[0]:
        return pd.DataFrame()
    args = args_of(profile, kernels, _LAUNCH)
    grid, block = _dims(args["grid"]), _dims(args["block"])
    op_names, op_code = _launching_ops(profile, kernels, args)
    launches = pd.DataFrame({
        "meta": profile.meta[kernels], "registers": _ints(args["registers per thread"]),
        "shared": _ints(args["shared memory"]),
        "g0": grid[0], "g1": grid[1], "g2": grid[2], "b0": block[0], "b1": block[1],
        "b2": block[2], "op": op_code, "occupancy": _occupancy(args["est. achieved occupancy %"]),
        "ps": profile.duration_ps[kernels]})
    kinds = launches.groupby(list(launches.columns[:10]), sort=False).agg(
        occupancy_pct=("occupancy", "first"), occurrences=("ps", "size"),
        total_ps=("ps", "sum"), min_ps=("ps", "min"), max_ps=("ps", "max")).reset_index()
    names = profile.metadata["name"].to_numpy(dtype=object)[kinds["meta"].to_numpy()]
    tensor_core = np.array([_TENSOR_CORE.get(tensor_core_use(str(n))) for n in names], dtype=object)
    ops = op_names[kinds["op"].to_numpy()]
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
    })


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


def _ints(column: np.ndarray) -> np.ndarray:
    """An integer arg per kernel; 0 where it is missing or not an integer (as XProf reads a
    missing launch parameter)."""
    return np.fromiter((v if type(v) is int else 0 for v in column.tolist()), np.int64,
                       column.shape[0])


def _present(column: np.ndarray) -> np.ndarray:
    """Where an integer arg is given."""
    return np.fromiter((type(v) is int for v in column.tolist()), bool, column.shape[0])


def _occupancy(column: np.ndarray) -> np.ndarray:
    """`est. achieved occupancy %` per kernel; NaN where the trace does not say."""
    return np.fromiter((float(v) if type(v) in (int, float) else np.nan
                        for v in column.tolist()), np.float64, column.shape[0])


def _launching_ops(profile: Profile, kernels: np.ndarray, args: dict[str, np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The op names ("" for none) and each kernel's code in them: the innermost cpu_op around the
    runtime call of the kernel's correlation, else the cpu_op of its External id."""
    ops = events_of(profile, CPU_OPS, "host")
    launched_by = np.full(kernels.shape[0], -1, np.int64)
    has_corr, correlation = _present(args["correlation"]), _ints(args["correlation"])
    calls = events_of(profile, _runtime_categories(profile), "host")
    has_call_corr, call_corr = int_stat(profile, calls, "correlation")
    calls, call_corr = calls[has_call_corr], call_corr[has_call_corr]
    if calls.shape[0] and ops.shape[0]:
        order = np.argsort(call_corr, kind="stable")
        at = np.minimum(np.searchsorted(call_corr[order], correlation), order.shape[0] - 1)
        call = calls[order][at]
        linked = has_corr & (call_corr[order][at] == correlation)
        launched_by[linked] = innermost_enclosing(profile, call[linked], ops)
    unresolved = np.flatnonzero(launched_by < 0)
    if unresolved.shape[0] and ops.shape[0]:
        new, old = (args[name][unresolved] for name in _EXTERNAL_ID)
        column = np.where(_present(new), new, old)
        has_ext, external = _present(column), _ints(column)
        has_op_ext, op_ext = int_stat(profile, ops, *_EXTERNAL_ID)
        by_ext = ops[has_op_ext][np.argsort(op_ext[has_op_ext], kind="stable")]
        ext_sorted = np.sort(op_ext[has_op_ext])
        if ext_sorted.shape[0]:
            at = np.minimum(np.searchsorted(ext_sorted, external), ext_sorted.shape[0] - 1)
            found = has_ext & (ext_sorted[at] == external)
            launched_by[unresolved[found]] = by_ext[at[found]]
    names = np.where(launched_by >= 0, profile.display_names[profile.meta[launched_by]], "")
    codes, uniques = pd.factorize(pd.Series(names, dtype=object))
    return np.asarray(uniques, dtype=object), codes.astype(np.int64)


def _runtime_categories(profile: Profile) -> list[str]:
    """The categories of host calls that launch GPU work (cuda_runtime, cuda_driver; ROCm
    traces use the same names), as the trace has them."""
    present = set(meta_categories(profile).tolist())
    return [c for c in ("cuda_runtime", "cuda_driver", "Runtime", "Driver") if c in present]
