"""Kernel stats: every GPU kernel by launch parameters and op (XProf's "kernel_stats").

As XProf builds them (xprof/convert/xplane_to_kernel_stats_db.cc, utils/kernel_stats_utils.cc):

- a kernel is an event with a `kernel_details` stat and a duration of at least a nanosecond on
  a `/device:GPU:N` plane; its launch parameters are the stat's tokens
  `regs:N static_shared:N dynamic_shared:N block:x,y,z grid:x,y,z occ_pct:F` (space or newline
  separated; a missing dimension is 1);
- its op: the name of its `tf_op` stat; for an XLA kernel (`hlo_op` stat), the framework op of
  that HLO instruction as `name:type` (the HLO metadata's op name and type);
- it uses TensorCores when its name contains one of XProf's patterns (tensor_core.py); its op
  is TensorCore-eligible when the op's `equation` is an einsum of two operands, the op name
  ends like a matrix or convolution op (`is_op_eligible`), or the kernel uses TensorCores;
- one row per unique (kernel, launch parameters, TensorCore use and eligibility, op), the first
  kernel's occupancy kept; durations in whole nanoseconds, as XProf counts them; rows by total
  time (then by kernel name and parameters), at most 1000.

XProf finds a kernel's HLO instruction by its `program_id` stat only; we also find the module by
the `hlo_module` stat's name, as the op profile does (`by_module_name=False`: XProf's way).

PyTorch profiler (Kineto) traces state the same facts as args of their `kernel` events; their
part is kineto/kernels.py (exact picosecond durations, the kernel's owner as the op: the
innermost cpu_op around its launch, else annotation, Python function or the launch call). Their
rows add KINETO_COLUMNS: the owner's category and PyTorch's TensorBoard plugin's mean blocks per
SM and mean estimated achieved occupancy (NaN where unstated). Their TensorCore use is read by kernel_families.py's wider table and may be unknown: the column then
holds True / False / None (None: the name does not say), XProf's rule staying on xplanes.

TPU runs have no kernels, except custom calls (Pallas and Mosaic `tpu_custom_call` kernels):
XLA has no cost model for them, so they are listed here with their time and occurrences, one
row per kernel op, without launch parameters.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..profile.derived import parse_framework_op
from ..profile.model import Profile
from .hlo_cost import HloCosts
from .hosts import host_parts
from .kineto.kernels import KERNEL_STATS, MEAN_SUMS, weighted_means
from .op_profile import is_custom_call
from .parts import FormatPart, present
from .steps import stat_hits, track_events
from .tensor_core import is_einsum_eligible, is_op_eligible, uses_tensor_core

MAX_ROWS = 1000
_GPU = re.compile(r"^/device:GPU:\d+$")
_TPU_CORE = re.compile(r"^/device:TPU:\d+$")
COLUMNS = [
    "rank", "kernel_name", "registers_per_thread", "shmem_bytes", "block_dim", "grid_dim",
    "occupancy_pct", "is_op_tensor_core_eligible", "is_kernel_using_tensor_core", "op_name",
    "occurrences", "total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us",
]
KINETO_COLUMNS = ["op_category", "mean_blocks_per_sm", "mean_est_achieved_occupancy_pct"]
"""After COLUMNS where a part is a Kineto trace's (kineto/kernels.py): the owner's category and
the duration-weighted means of `blocks per SM` and `est. achieved occupancy %`, NaN where no
kernel of the row states them."""
_KEY = ["kernel_name", "grid", "block", "registers_per_thread", "static_shmem_bytes",
        "dynamic_shmem_bytes", "is_kernel_using_tensor_core", "is_op_tensor_core_eligible",
        "op_name"]


def parse_launch(details: str) -> dict[str, Any]:
    """Launch parameters from a `kernel_details` stat; unknown or malformed tokens are skipped."""
    out: dict[str, Any] = {"registers_per_thread": 0, "static_shmem_bytes": 0,
                           "dynamic_shmem_bytes": 0, "block": (1, 1, 1), "grid": (1, 1, 1),
                           "occupancy_pct": 0.0}
    names = {"regs": "registers_per_thread", "static_shared": "static_shmem_bytes",
             "dynamic_shared": "dynamic_shmem_bytes"}
    for token in re.split(r"[ \n]", details):
        parts = token.split(":")
        if len(parts) != 2:
            continue
        key, value = parts
        if key in names and value.isdigit():
            out[names[key]] = int(value)
        elif key in ("block", "grid"):
            dims = value.split(",")
            if len(dims) == 3 and all(d.isdigit() for d in dims):
                out[key] = tuple(int(d) for d in dims)
        elif key == "occ_pct":
            try:
                out["occupancy_pct"] = float(value)
            except ValueError:
                pass
    return out


class _HloOps:
    """The framework op (`name:type`) of an HLO instruction, by program id or module name."""

    def __init__(self, profile: Profile, by_module_name: bool):
        modules = profile.hlo_modules
        self._profile = profile
        self._by_id = {int(p) & (2**64 - 1): int(p) for p in modules["program_id"]}
        self._by_name = dict(zip(modules["name"], modules["program_id"], strict=True)) \
            if by_module_name else {}
        self._costs: dict[int, HloCosts] = {}

    def op_of(self, program_id: int | None, module: str | None, name: str) -> str | None:
        key = self._by_id.get(program_id) if program_id is not None else None
        if key is None and module:
            key = self._by_name.get(module)
        if key is None:
            return None
        if key not in self._costs:
            self._costs[key] = HloCosts(self._profile.hlo_proto(key), where=self._profile.source)
        instruction = self._costs[key].instruction(name)
        if instruction is None:
            return None
        return tf_op_fullname(instruction.metadata.op_type, instruction.metadata.op_name)


def tf_op_fullname(op_type: str, op_name: str) -> str:
    """An HLO instruction's framework op as XProf (2.24) names a kernel's: `name:type`, the bare
    name where the type is empty (JAX writes none: `jit(dot)/dot_general`), "" where both are
    (so a kernel without an op has one row, not a "" and a ":" one)."""
    return f"{op_name}:{op_type}" if op_type else op_name


def kernel_stats(profile: Profile, by_module_name: bool = True) -> pd.DataFrame:
    """One row per unique GPU kernel (see the module doc and COLUMNS), by total time."""
    return profile.memo(("kernel_stats", by_module_name),
                        lambda: _gpu_kernels(profile, by_module_name))


def _gpu_kernels(profile: Profile, by_module_name: bool) -> pd.DataFrame:
    parts = [part.read(profile, by_module_name) for part in present(profile, FORMATS)]
    parts = [part for part in parts if len(part)]
    return _rows(pd.concat(parts, ignore_index=True)) if parts else _empty()


def xspace_kernels(profile: Profile, by_module_name: bool) -> pd.DataFrame:
    """Every host's `gpu_kernel_part`, host after host."""
    frames = [p.part for p in host_parts(profile, gpu_kernel_part, by_module_name)
              if len(p.part)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def gpu_kernel_part(profile: Profile, by_module_name: bool) -> pd.DataFrame:
    """One host's part (analysis/hosts.py): a row per kind of kernel launch (kernel, launch
    parameters, op) with its occurrences and total/min/max time in whole ns (as ps, `tick_ps`
    1000); `_rows` adds the hosts' up. Kineto traces have their own part (kineto/kernels.py)."""
    tracks = profile.built_tracks
    gpu = tracks.index[tracks["section"].map(lambda s: bool(_GPU.match(s))).to_numpy(bool)]
    events = np.sort(track_events(profile, gpu.to_numpy()))  # file order: planes, lines
    events = events[~profile.derived[events] & (profile.duration_ps[events] // 1000 > 0)]
    details, details_text = _codes(profile, events, "kernel_details")
    kernels = events[details >= 0]
    if not kernels.shape[0]:
        return pd.DataFrame()
    has_pid, pid = profile.stat_ints(kernels, "program_id")
    columns = {"meta": profile.meta[kernels], "details": details[details >= 0],
               "pid": np.where(has_pid, pid, 0).astype(np.uint64), "has_pid": has_pid}
    texts = {"details": details_text}
    for stat in ("tf_op", "equation", "hlo_op", "hlo_module"):
        columns[stat], texts[stat] = _codes(profile, kernels, stat)
    launches = pd.DataFrame(columns)
    combo = launches.groupby(list(columns), sort=False).ngroup().to_numpy()
    kinds = launches.drop_duplicates().reset_index(drop=True)  # ngroup numbers them in this order
    duration = profile.duration_ps[kernels] // 1000 * 1000  # whole ns, as XProf counts them
    per_kind = pd.DataFrame({"kind": combo, "ps": duration}).groupby("kind").agg(
        occurrences=("ps", "size"), total_ps=("ps", "sum"), min_ps=("ps", "min"),
        max_ps=("ps", "max"))
    names = profile.metadata["name"].to_numpy(dtype=object)
    lookup = _HloOps(profile, by_module_name)
    rows = []
    for k, kind in enumerate(kinds.itertuples(index=False)):
        text = {stat: (str(texts[stat][code]) if code >= 0 else "")
                for stat, code in (("tf_op", kind.tf_op), ("equation", kind.equation),
                                   ("hlo_op", kind.hlo_op), ("hlo_module", kind.hlo_module))}
        name = str(names[kind.meta])
        row = {**parse_launch(str(texts["details"][kind.details])), "kernel_name": name,
               "is_kernel_using_tensor_core": uses_tensor_core(name), "op_name": "",
               "is_op_tensor_core_eligible": False, **per_kind.loc[k].to_dict(),
               "tick_ps": 1000}
        if text["tf_op"]:
            row["op_name"] = parse_framework_op(text["tf_op"]).name
            row["is_op_tensor_core_eligible"] = (
                is_einsum_eligible(text["equation"]) or is_op_eligible(row["op_name"])
                or row["is_kernel_using_tensor_core"])
        if text["hlo_op"]:
            op = lookup.op_of(int(kind.pid) if kind.has_pid else None, text["hlo_module"],
                              text["hlo_op"].split("::")[-1])
            if op is not None:
                row["op_name"] = op
                row["is_op_tensor_core_eligible"] = (is_op_eligible(op)
                                                     or row["is_op_tensor_core_eligible"])
        rows.append(row)
    return pd.DataFrame(rows)


def _codes(profile: Profile, events: np.ndarray, stat: str) -> tuple[np.ndarray, np.ndarray]:
    """Per event, the code of its (non-empty) value of a string stat, -1 without one; and the
    values by code. Only events that carry the stat are ever read as Python strings."""
    hits, values = stat_hits(profile, events, stat)
    text = pd.Series(values, dtype=object).astype(str)
    hits, text = hits[(text != "").to_numpy()], text[text != ""]
    codes, uniques = pd.factorize(text)
    out = np.full(events.shape[0], -1, np.int64)
    out[np.searchsorted(events, hits)] = codes
    return out, np.asarray(uniques, dtype=object)


def _tensor_core_codes(column: pd.Series) -> np.ndarray:
    """TensorCore use as a sortable code: 0 no, 1 yes, 2 unknown (None: a Kineto kernel whose
    name does not say, kernel_families.py); XProf's yes/no rows keep their order."""
    return np.fromiter((2 if v is None or pd.isna(v) else int(bool(v))
                        for v in column.tolist()), np.int8, len(column))


def _tensor_core_flags(codes: pd.Series) -> pd.Series:
    """The codes back as booleans, or as True / False / None where some kernel is unknown."""
    if not (codes == 2).any():
        return codes.astype(bool)
    return pd.Series([None if c == 2 else bool(c) for c in codes.tolist()], dtype=object,
                     index=codes.index)


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.assign(is_kernel_using_tensor_core=_tensor_core_codes(
        frame["is_kernel_using_tensor_core"]))
    kineto = {"op_category": ("op_category", "first"),
              **{c: (c, "sum") for c in MEAN_SUMS}} if "op_category" in frame else {}
    grouped = frame.groupby(_KEY, sort=False, dropna=False).agg(
        occupancy_pct=("occupancy_pct", "first"), occurrences=("occurrences", "sum"),
        total_ps=("total_ps", "sum"), min_ps=("min_ps", "min"), max_ps=("max_ps", "max"),
        tick_ps=("tick_ps", "max"), **kineto).reset_index()
    grouped["grid0"], grouped["grid1"], grouped["grid2"] = zip(*grouped["grid"], strict=True)
    grouped["block0"], grouped["block1"], grouped["block2"] = zip(*grouped["block"],
                                                                  strict=True)
    order = ["total_ps", "kernel_name", "grid0", "grid1", "grid2", "block0", "block1", "block2",
             "registers_per_thread", "static_shmem_bytes", "dynamic_shmem_bytes",
             "is_kernel_using_tensor_core", "is_op_tensor_core_eligible", "op_name"]
    grouped = grouped.sort_values(order, ascending=[False] + [True] * (len(order) - 1),
                                  kind="stable").head(MAX_ROWS).reset_index(drop=True)
    total = grouped["total_ps"].to_numpy(np.int64)
    occurrences = grouped["occurrences"].to_numpy(np.int64)
    tick = grouped["tick_ps"].to_numpy(np.int64)
    out = pd.DataFrame({
        "rank": np.arange(1, len(grouped) + 1),
        "kernel_name": grouped["kernel_name"].astype(str),
        "registers_per_thread": grouped["registers_per_thread"].astype(np.int64),
        "shmem_bytes": (grouped["static_shmem_bytes"] + grouped["dynamic_shmem_bytes"]
                        ).astype(np.int64),
        "block_dim": [",".join(map(str, b)) for b in grouped["block"]],
        "grid_dim": [",".join(map(str, g)) for g in grouped["grid"]],
        "occupancy_pct": grouped["occupancy_pct"].astype(np.float64),
        "is_op_tensor_core_eligible": grouped["is_op_tensor_core_eligible"].astype(bool),
        "is_kernel_using_tensor_core": _tensor_core_flags(grouped["is_kernel_using_tensor_core"]),
        "op_name": grouped["op_name"].astype(str),
        "occurrences": occurrences,
        "total_duration_us": total / 1e6,
        "avg_duration_us": (total // occurrences // tick * tick) / 1e6,
        "min_duration_us": grouped["min_ps"].to_numpy(np.int64) / 1e6,
        "max_duration_us": grouped["max_ps"].to_numpy(np.int64) / 1e6,
    })[COLUMNS]
    if not kineto:
        return out
    means = weighted_means(grouped)
    return out.assign(op_category=grouped["op_category"].fillna("").astype(str),
                      mean_blocks_per_sm=means["blocks_per_sm"],
                      mean_est_achieved_occupancy_pct=means["occupancy"])


def _empty() -> pd.DataFrame:
    text = ("kernel_name", "block_dim", "grid_dim", "op_name")
    flags = ("is_op_tensor_core_eligible", "is_kernel_using_tensor_core")
    return pd.DataFrame({c: pd.Series(dtype=object if c in text else bool if c in flags
                                      else np.float64) for c in COLUMNS})


# ---- TPU custom calls ---------------------------------------------------------------------------
CUSTOM_CALL_COLUMNS = ["rank", "kernel_name", "program_id", "op_name", "occurrences",
                       "total_duration_us", "avg_duration_us", "min_duration_us",
                       "max_duration_us"]


def custom_call_kernels(profile: Profile) -> pd.DataFrame:
    """Custom-call kernels (Pallas, Mosaic) on TPU cores' `XLA Ops` lines: one row per op
    (program, name) with its framework op and durations (device clock where recorded)."""
    return profile.memo(("custom_call_kernels",), lambda: _custom_calls(profile))


def _custom_calls(profile: Profile) -> pd.DataFrame:
    parts = [p.part for p in host_parts(profile, custom_call_part) if len(p.part)]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in CUSTOM_CALL_COLUMNS})
    grouped = pd.concat(parts, ignore_index=True).groupby(
        ["program_id", "kernel_name"], sort=False).agg(
        op_name=("op_name", "first"), occurrences=("occurrences", "sum"),
        total=("total", "sum"), low=("low", "min"), high=("high", "max")).reset_index()
    grouped = grouped.sort_values(["total", "kernel_name"], ascending=[False, True],
                                  kind="stable").reset_index(drop=True)
    return pd.DataFrame({
        "rank": np.arange(1, len(grouped) + 1), "kernel_name": grouped["kernel_name"],
        "program_id": grouped["program_id"], "op_name": grouped["op_name"],
        "occurrences": grouped["occurrences"].astype(np.int64),
        "total_duration_us": grouped["total"] / 1e6,
        "avg_duration_us": grouped["total"] / grouped["occurrences"] / 1e6,
        "min_duration_us": grouped["low"] / 1e6, "max_duration_us": grouped["high"] / 1e6,
    })[CUSTOM_CALL_COLUMNS]


def custom_call_part(profile: Profile) -> pd.DataFrame:
    """One host's custom calls: occurrences and total/min/max ps per (program id, kernel)."""
    md = profile.metadata
    rows = np.flatnonzero([is_custom_call(str(s.get("hlo_category", "")), str(n))
                           for n, s in zip(md["name"], md["stats"], strict=True)])
    tracks = profile.built_tracks
    lines = tracks.index[(tracks["name"] == "XLA Ops") & tracks["section"].map(
        lambda s: bool(_TPU_CORE.match(s))).to_numpy(bool)]
    events = track_events(profile, lines.to_numpy())
    events = events[np.isin(profile.meta[events], rows)]
    if not rows.shape[0] or not events.shape[0]:
        return pd.DataFrame()
    present, device = profile.stat_ints(events, "device_duration_ps")
    duration = np.where(present, device.view(np.int64), profile.duration_ps[events])
    meta = profile.meta[events]
    stats = md["stats"].to_numpy()
    frame = pd.DataFrame({
        "kernel_name": profile.display_names[meta].astype(str),
        "program_id": [str(int(stats[m].get("program_id", 0) or 0) & (2**64 - 1))
                       for m in meta.tolist()],
        "op_name": [str(stats[m].get("tf_op", "") or "") for m in meta.tolist()],
        "duration_ps": duration})
    return frame.groupby(["program_id", "kernel_name"], sort=False).agg(
        op_name=("op_name", "first"), occurrences=("duration_ps", "size"),
        total=("duration_ps", "sum"), low=("duration_ps", "min"),
        high=("duration_ps", "max")).reset_index()


def has_gpu_planes(profile: Profile) -> bool:
    """Whether the profile has `/device:GPU:N` planes (as XProf offers the tool)."""
    return bool(profile.sections["name"].map(lambda s: bool(_GPU.match(s))).any())


FORMATS = (FormatPart("xspace", has_gpu_planes, xspace_kernels), KERNEL_STATS)
"""Where GPU kernels come from, by format (analysis/parts.py)."""


def kernel_stats_available(profile: Profile) -> bool:
    """Whether the profile has GPU kernels in any format, or TPU custom calls."""
    return bool(present(profile, FORMATS)) or len(custom_call_kernels(profile)) > 0
