"""The Operator view of PyTorch's TensorBoard plugin (torch-tb-profiler) on a Kineto trace.

Every `cpu_op` occurrence gets four times and a Tensor Core reading, then occurrences are summed
by op name, by name and input shape, or by name and call stack (`GROUPINGS`):

- host total: its duration; host self: that minus every host event directly inside it
  (kineto_ops.host_self_times, `key_averages()`' rule, as the host rows of Framework Op Stats);
- device self: the summed durations of the GPU work (kernels, copies, sets) it launched, found
  by kineto.kernels._launching_ops (the innermost cpu_op around the work's runtime call, ...);
  device total: that of every op nested in it on its thread too. These are the plugin's "Device
  Self/Total Duration" and key_averages()' "Self CUDA" / "CUDA total" (summed durations: with
  concurrent streams they may pass the busy time, unlike Framework Op Stats' device shares);
- input shape: the op's `Input Dims` arg (`record_shapes=True`) as Python writes the list,
  "[]" without one (as the plugin and key_averages(group_by_input_shape=True) key it);
- call stack: the op's `Call stack` arg (older PyTorch with `with_stack=True`), else the
  `python_function` events around it (newer PyTorch), innermost first, joined by ";";
- Tensor Cores: an op is eligible when its name is one PyTorch's autocast runs in lower
  precision (`ELIGIBLE_OPS`), when work it launched uses Tensor Cores, or when an op nested in
  it is eligible (the plugin's rule); its Tensor Core shares are of its device self and total
  time run in kernels that use them (kernel_families.tensor_core_use), NaN where part of that
  time is in kernels whose use is unknown (a Triton or custom kernel: unknown stays unknown) or
  where there is no device time (the plugin writes 0 there).

GPU work that no cpu_op launched stands as a row of its own name (or the name it was tied to)
with 0 calls and no host time; the plugin leaves it out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..hosts import host_parts
from ..kernel_families import UNKNOWN, YES, tensor_core_use
from . import CPU_OPS, args_of, events_of, has_category, innermost_enclosing, int_stat
from .kernels import LINKS, by_external_id, launch_calls, launch_owners
from .ops import DEVICE_WORK, UNKNOWN_TYPE, host_self_times, op_type

GROUPINGS = ("op", "input_shape", "call_stack")
"""How occurrences are summed: by op name, by name and input shape, by name and call stack."""
KEYS = {"op": ["operation"], "input_shape": ["operation", "input_shape"],
        "call_stack": ["operation", "call_stack"]}
PS_PER_US = 1_000_000
ELIGIBLE_OPS = frozenset({
    # PyTorch's autocast lower-precision list (aten/src/ATen/autocast_mode.cpp), as the plugin
    # reads it, with the backward ops it recorded launching Tensor Core kernels
    "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_tbc",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
    "aten::convolution", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
    "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul", "aten::mm",
    "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm",
    "aten::chain_matmul", "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell", "CudnnConvolutionBackward", "BmmBackward0",
    "aten::cudnn_convolution_transpose_backward", "CudnnConvolutionTransposeBackward",
    "MmBackward", "aten::cudnn_convolution_backward_weight", "aten::addmm_", "AddmvBackward",
    "MvBackward", "aten::cudnn_convolution_transpose_backward_weight",
    "aten::cudnn_convolution_transpose_backward_input", "AddmmBackward",
    "aten::cudnn_convolution_backward_input", "AddbmmBackward", "aten::cudnn_convolution_backward",
})
"""Ops whose name makes them Tensor Core eligible (torch-tb-profiler's tensor_core.py list)."""
ELIGIBLE_OPS_PYTORCH2 = frozenset({
    "aten::einsum", "aten::linalg_vecdot", "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward",
    "aten::_flash_attention_backward", "aten::_efficient_attention_forward",
    "aten::_efficient_attention_backward", "aten::_scaled_mm", "aten::_int_mm",
    "aten::convolution_backward", "ConvolutionBackward0", "MmBackward0", "AddmmBackward0",
    "AddmvBackward0", "MvBackward0", "AddbmmBackward0", "BaddbmmBackward0",
})
"""PyTorch 2's names for the same work (autocast's list grew einsum, vecdot and attention;
autograd nodes gained a `0`, cuDNN's backward ops became convolution_backward): a chosen
difference from the plugin, which predates them."""
_SUMS = ["calls", "host_total_ps", "host_self_ps", "device_total_ps", "device_self_ps",
         "tc_self_ps", "tc_self_unknown_ps", "tc_total_ps", "tc_total_unknown_ps"]
COLUMNS = ["operation", "input_shape", "call_stack", "type", "calls", "device_self_time_us",
           "device_total_time_us", "host_self_time_us", "host_total_time_us",
           "tensor_core_eligible", "tensor_core_self_pct", "tensor_core_total_pct"]
"""The table's columns; `input_shape` and `call_stack` only where the grouping has them."""


def is_tensor_core_eligible(name: str) -> bool:
    """Whether an op's name alone makes it Tensor Core eligible (see ELIGIBLE_OPS)."""
    return name in ELIGIBLE_OPS or name in ELIGIBLE_OPS_PYTORCH2


def operators(profile: Profile, group_by: str = "op") -> pd.DataFrame:
    """The Operator view's table of a Kineto profile (module doc), summed over its hosts; largest
    device self time first (host self time where no op ran GPU work), then by key. Empty (with
    the columns) for a profile without cpu_ops or GPU work."""
    if group_by not in GROUPINGS:
        raise ValueError(f"group_by={group_by!r}: the Operator view groups by one of "
                         f"{', '.join(GROUPINGS)}")
    return profile.memo(("kineto_operators", group_by), lambda: _combined(profile, group_by))


def _combined(profile: Profile, group_by: str) -> pd.DataFrame:
    keys = KEYS[group_by]
    parts = [p.part for p in host_parts(profile, operator_part, group_by) if len(p.part)]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _columns(keys)})
    sums = _grouped(pd.concat(parts, ignore_index=True), keys)
    ran_gpu_work = bool(sums["device_total_ps"].sum() > 0)
    first = "device_self_ps" if ran_gpu_work else "host_self_ps"
    sums = sums.sort_values([first, *keys], ascending=[False] + [True] * len(keys),
                            kind="stable", ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = sums[keys].assign(
            type=[op_type(str(n)) if c else UNKNOWN_TYPE
                  for n, c in zip(sums["operation"].tolist(), sums["calls"].tolist(), strict=True)],
            calls=sums["calls"].to_numpy(np.int64),
            device_self_time_us=sums["device_self_ps"].to_numpy(np.float64) / PS_PER_US,
            device_total_time_us=sums["device_total_ps"].to_numpy(np.float64) / PS_PER_US,
            host_self_time_us=sums["host_self_ps"].to_numpy(np.float64) / PS_PER_US,
            host_total_time_us=sums["host_total_ps"].to_numpy(np.float64) / PS_PER_US,
            tensor_core_eligible=sums["eligible"].to_numpy(bool),
            tensor_core_self_pct=_share(sums, "tc_self_ps", "tc_self_unknown_ps",
                                        "device_self_ps"),
            tensor_core_total_pct=_share(sums, "tc_total_ps", "tc_total_unknown_ps",
                                         "device_total_ps"))
    return out[_columns(keys)]


def _columns(keys: list[str]) -> list[str]:
    return [c for c in COLUMNS if c in keys or c not in ("input_shape", "call_stack")]


def _share(sums: pd.DataFrame, yes: str, unknown: str, total: str) -> np.ndarray:
    """Percent of `total` in Tensor Core kernels; NaN without device time or where some of it
    ran in kernels of unknown use."""
    time = sums[total].to_numpy(np.float64)
    share = sums[yes].to_numpy(np.float64) / np.where(time > 0, time, np.nan) * 100
    return np.where(sums[unknown].to_numpy(np.float64) > 0, np.nan, share)


def _grouped(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Occurrence rows (or per-host sums) summed per key; eligible if any of them is."""
    return frame.groupby(keys, sort=False).agg(
        **{c: (c, "sum") for c in _SUMS}, eligible=("eligible", "any")).reset_index()


def operator_part(profile: Profile, group_by: str) -> pd.DataFrame:
    """One host's part: sums per key of `group_by` (GROUPINGS) in ps, `eligible` per key."""
    keys = KEYS[group_by]
    found = _occurrences(profile)
    if found is None:
        return pd.DataFrame()
    ops, names, start, end, own, work, work_op, work_name, first, last = found
    duration = profile.duration_ps[work].astype(np.int64)
    use = _tensor_core_use(profile, work)
    mine = work_op >= 0
    n = ops.shape[0]
    device_self = _per_op(work_op[mine], duration[mine], n)
    tc_self = _per_op(work_op[mine], np.where(use == YES, duration, 0)[mine], n)
    tc_unknown = _per_op(work_op[mine], np.where(use == UNKNOWN, duration, 0)[mine], n)
    name_eligible = np.fromiter((is_tensor_core_eligible(str(x)) for x in names.tolist()), bool, n)
    frame = pd.DataFrame({
        "operation": names, "calls": 1, "host_total_ps": end - start, "host_self_ps": own,
        "device_self_ps": device_self, "device_total_ps": _ranged(device_self, first, last),
        "tc_self_ps": tc_self, "tc_self_unknown_ps": tc_unknown,
        "tc_total_ps": _ranged(tc_self, first, last),
        "tc_total_unknown_ps": _ranged(tc_unknown, first, last),
        "eligible": _ranged((name_eligible | (tc_self > 0)).astype(np.int64), first, last) > 0,
    })
    if "input_shape" in keys:
        frame["input_shape"] = _input_shapes(profile, ops)
    if "call_stack" in keys:
        frame["call_stack"] = _call_stacks(profile, ops)
    alone = ~mine
    if alone.any():  # work no cpu_op occurrence launched: a row of its own name
        d, u = duration[alone], use[alone]
        frame = pd.concat([frame, pd.DataFrame({
            "operation": work_name[alone], "calls": 0, "host_total_ps": 0, "host_self_ps": 0,
            "device_self_ps": d, "device_total_ps": d,
            "tc_self_ps": np.where(u == YES, d, 0), "tc_total_ps": np.where(u == YES, d, 0),
            "tc_self_unknown_ps": np.where(u == UNKNOWN, d, 0),
            "tc_total_unknown_ps": np.where(u == UNKNOWN, d, 0), "eligible": u == YES,
            **{k: "" for k in keys[1:]}})], ignore_index=True)
    return _grouped(frame, keys)


def _occurrences(profile: Profile) -> tuple[np.ndarray, ...] | None:
    """Every cpu_op occurrence (outer before inner per thread: ops first..last-1 are an op and
    the ops nested in it) and the GPU work, with the occurrence that launched each piece:
    (ops, names, start, end, host self, work, work's op or -1, work's name, first, last);
    None without either."""
    work = events_of(profile, DEVICE_WORK, "device")
    events, track, start, end, _, own, category = host_self_times(profile)
    is_op = np.isin(category, CPU_OPS)
    ops, track, start, end, own = (a[is_op] for a in (events, track, start, end, own))
    if not ops.shape[0] and not work.shape[0]:
        return None
    names = profile.display_names[profile.meta[ops]].astype(object)
    work_op, work_name = _work_ops(profile, work, ops, names)
    first, last = np.arange(ops.shape[0]), _subtree_ends(track, start, end)
    return ops, names, start, end, own, work, work_op, work_name, first, last


def op_device_times(profile: Profile) -> tuple[np.ndarray, ...] | None:
    """Per cpu_op occurrence of one host: (ops, names, host time, device self, device total,
    last), times in ps: the GPU work it launched itself, and that of the ops nested in it too
    (ops i+1..last-1); None without cpu_ops."""
    found = _occurrences(profile)
    if found is None or not found[0].shape[0]:
        return None
    ops, names, start, end, _, work, work_op, _, first, last = found
    mine = work_op >= 0
    duration = profile.duration_ps[work].astype(np.int64)
    device_self = _per_op(work_op[mine], duration[mine], ops.shape[0])
    return ops, names, end - start, device_self, _ranged(device_self, first, last), last


def _work_ops(profile: Profile, work: np.ndarray, ops: np.ndarray, names: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Per piece of work, the op occurrence (index in `ops`) that launched it, -1 for none, and
    the name it is tied to: its owner's (kineto.kernels.launch_owners) where it has one, else
    its own. The occurrence is the owner when that is a cpu_op: the cpu_op of the owner's name
    innermost around the work's launch call, else the one of its External id (the two ways
    launch_owners finds a cpu_op)."""
    args = args_of(profile, work, LINKS)
    owners = launch_owners(profile, work, args)
    tied = owners.names[owners.code].astype(object)
    at = np.full(work.shape[0], -1, np.int64)
    if ops.shape[0]:
        position = np.full(int(ops.max()) + 1, -1, np.int64)
        position[ops] = np.arange(ops.shape[0])
        call = launch_calls(profile, args["correlation"])
        around = np.full(work.shape[0], -1, np.int64)
        linked = np.flatnonzero(call >= 0)
        around[linked] = innermost_enclosing(profile, call[linked], ops)
        by_id = by_external_id(profile, {n: args[n] for n in LINKS[1:]})
        for candidate in (around, np.where(call < 0, by_id, -1)):
            index = np.where(candidate >= 0, position[np.maximum(candidate, 0)], -1)
            found = (at < 0) & (index >= 0)
            found[found] = names[index[found]] == tied[found]
            at[found] = index[found]
    own = profile.display_names[profile.meta[work]].astype(object)
    return at, np.where(tied == "", own, tied)


def _tensor_core_use(profile: Profile, work: np.ndarray) -> np.ndarray:
    """yes / no / unknown per piece of work, read once per distinct name."""
    meta, inverse = np.unique(profile.meta[work], return_inverse=True)
    names = profile.display_names[meta]
    return np.array([tensor_core_use(str(n)) for n in names.tolist()], dtype=object)[inverse]


def _subtree_ends(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For ops sorted outer before inner per thread: one past the last op that starts before
    each op's end on its thread, so ops i..j-1 are op i and the ops nested in it."""
    n = track.shape[0]
    kind = np.repeat([1, 0], n)  # an end sorts before an op starting at that instant
    order = np.lexsort((kind, np.concatenate([start, end]), np.concatenate([track, track])))
    is_start = kind[order] == 1
    before = np.cumsum(is_start) - is_start
    last = np.empty(n, np.int64)
    last[order[~is_start] - n] = before[~is_start]
    return np.maximum(last, np.arange(n) + 1)  # an op of no duration holds itself


def _per_op(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact integer sums of values per op index."""
    out = np.zeros(n, np.int64)
    np.add.at(out, index, values)
    return out


def _ranged(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Sums of values[first:last] per op, exact."""
    cumulative = np.concatenate([[0], np.cumsum(values.astype(np.int64))])
    return cumulative[last] - cumulative[first]


def _input_shapes(profile: Profile, ops: np.ndarray) -> np.ndarray:
    """Each op's `Input Dims` (`Input dims` in older traces) as str() writes the list; "[]"
    without one."""
    args = args_of(profile, ops, ("Input Dims", "Input dims"))
    return np.array([str(a if a is not None else b if b is not None else [])
                     for a, b in zip(args["Input Dims"].tolist(), args["Input dims"].tolist(),
                                     strict=True)], dtype=object)


def _call_stacks(profile: Profile, ops: np.ndarray) -> np.ndarray:
    """Each op's `Call stack` arg, else the Python functions around it (innermost first, by
    their `Python parent id`), joined by ";"; "" where neither is in the trace."""
    given = args_of(profile, ops, ("Call stack",))["Call stack"]
    stacks = np.array([v if isinstance(v, str) else "" for v in given.tolist()], dtype=object)
    functions = events_of(profile, ("python_function",), "host")
    missing = np.flatnonzero(stacks == "")
    if not functions.shape[0] or not missing.shape[0]:
        return stacks
    innermost = innermost_enclosing(profile, ops[missing], functions)
    parent = _python_parents(profile, functions)
    position = np.full(int(functions.max()) + 1, -1, np.int64)
    position[functions] = np.arange(functions.shape[0])
    heads, where = np.unique(innermost, return_inverse=True)
    frames, current = [], np.where(heads >= 0, position[np.maximum(heads, 0)], -1)
    for _ in range(functions.shape[0]):  # a stack is at most every function deep
        if not (current >= 0).any():
            break
        frames.append(current)
        current = np.where(current >= 0, parent[np.maximum(current, 0)], -1)
    names = profile.display_names[profile.meta[functions]]
    text = [";".join(str(names[f[k]]) for f in frames if f[k] >= 0) for k in range(len(heads))]
    stacks[missing] = np.array(text, dtype=object)[where]
    return stacks


def _python_parents(profile: Profile, functions: np.ndarray) -> np.ndarray:
    """Per Python function event, the index (in `functions`) of its caller's, -1 for none."""
    has_id, ids = int_stat(profile, functions, "Python id")
    has_parent, parents = int_stat(profile, functions, "Python parent id")
    out = np.full(functions.shape[0], -1, np.int64)
    if not has_id.any():
        return out
    order = np.flatnonzero(has_id)[np.argsort(ids[has_id], kind="stable")]
    at = np.minimum(np.searchsorted(ids[order], parents), order.shape[0] - 1)
    found = has_parent & (ids[order][at] == parents)
    out[found] = order[at[found]]
    return out


def has_operators(profile: Profile) -> bool:
    """Whether the Operator view has rows: a Kineto trace with cpu_ops or GPU work. Asked of
    each host where it lives (a pod's on its Dask worker), reading no events."""
    return profile.memo(("kineto_operators_offered",), lambda: any(
        p.part for p in host_parts(profile, _offers_operators)))


def _offers_operators(profile: Profile) -> bool:
    return has_category(profile, (*CPU_OPS, *DEVICE_WORK))

