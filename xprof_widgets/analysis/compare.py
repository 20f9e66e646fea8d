"""Two runs side by side: what got slower, faster, bigger, and what exists in one run only.

Everything here is read from the other analyses' public results, so a comparison never
disagrees with the tools: steps and their breakdown from `analyze_input_pipeline`, ops from
`analyze_op_profile`, peaks and buffers from `analyze_memory`.

- Steps are paired by position (the k-th step of each run), whatever their numbers.
- Ops are rows of the op profile summed by (program name, op name): program ids differ between
  runs, names do not. An op is matched across runs in four rounds, each over what the earlier
  rounds left unmatched, within one program name:
  1. same name and same HLO fingerprint;
  2. same fingerprint under another name (XLA renumbered it: `fusion.12` became `fusion.14`);
  3. same name and the same fingerprint once array sizes are ignored (a larger batch);
  4. same structure under another name;
  and by name alone where either run has no HLO for the op. The fingerprint is the op's HLO
  instruction text with every `%name` dropped (the op's own, its operands', the computations
  it calls) and its `metadata={...}`, plus, for a fusion, the same text of every instruction
  inside it. The structural fingerprint keeps the operands' names without their number
  (`%broadcast_maximum_fusion.3` is `%broadcast_maximum_fusion`: what feeds the op) and drops
  the sizes inside shapes (`f32[512,16]` is `f32[#,#]`), and leaves out what a fusion holds
  (a fusion that also took in the next op is still the op fed by the same operands).
  Ops left over are `added` (after only) or `removed` (before only).
- Noise: a change is real only when the runs' own spread cannot explain it. An op's spread is
  that of its occurrences within each run (the op profile's moments of ln(1 + ps) per
  occurrence: timing noise is multiplicative and heavy-tailed, one preempted occurrence can take
  20 times the others). The op's log total time is log(occurrences) + the mean log time, whose
  standard error is sqrt(variance / occurrences); the change is real when the difference of the
  two runs' log totals exceeds `k` (default 3) standard errors of the two together, points the
  same way as the change of time, and is at least `floor_us` (default 1 us) per occurrence.
  Otherwise it is `unchanged`; real ones are `slower` or `faster`; `change_se` is the
  difference in standard errors. A side that ran the op once borrows the other side's spread; an
  op that ran once in both, and GPU kernels and PyTorch trace names (no per-occurrence times
  here), fall back to `threshold` (default 5%) of the larger of the two times. A grouping's
  (category, program, framework op) spread is its ops' by the delta method (each op's variance
  weighted by the square of its share of the group's time). Steps: a step position changed when
  its two durations differ by more than `k` times the combined spread of each run's step times;
  a part of the average step when its medians differ by more than `k` standard errors of the
  runs' per-step values (1.253 spread / sqrt(steps), the median's). A step's spread is
  1.4826 x the median absolute deviation, the standard deviation of normal noise, which one
  warm-up step does not inflate.
- GPU kernels: the kernel stats' rows summed by (kernel name, op), matched on both; launch
  parameters are left out of the key (a larger batch launches a larger grid of one kernel).
- PyTorch (Kineto) traces have no XLA ops: their ops and kernels are compared as HTA's trace
  diff compares them (`trace_diff`, analysis/kineto/trace_diff.py): one profiler step of one rank of
  each run (the first of each by default), every event by name, its count and total time; a
  name's `count_change` is HTA's split (added, removed, more, fewer, same), its `status` the
  time's, as for ops.
- Memory: per module name and memory space, the peak of the module of that name that ran (the
  largest, when several of one name ran). Spaces are named as the device names them: XLA's
  memory space 0 is HBM on a TPU, but RAM on a CPU and GPU memory on a GPU (DEVICE_MEMORY).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.model import Profile
from .input_pipeline import STEP_PARTS, analyze_input_pipeline
from .kernel_stats import kernel_stats
from .kineto.trace_diff import is_kineto, trace_ops, trace_scope
from .memory import MIB, analyze_memory, default_module, memory_spaces
from .op_profile import PS_PER_US, OpProfileAnalysis, analyze_op_profile
from .step_breakdown import NAMES
from .steps import HOW_TO_MARK

TRACE_COLUMNS = ["name", "device", "occurrences_before", "occurrences_after", "count_change",
                 "time_before_us", "time_after_us", "change_us", "change_pct", "status"]
COUNT_CHANGES = ("added", "removed", "more", "fewer", "same")
"""HTA's ops_diff words (added, deleted, increased, decreased, unchanged) for a name's count."""
THRESHOLD = 0.05
"""Where no spread is known: a change under this share of the larger time is unchanged."""
K = 3.0
"""Standard errors of the runs' own spread a change must exceed to be real."""
FLOOR_US = 1.0
"""A change under this many microseconds per occurrence is unchanged, whatever the spread."""
GROUPINGS = ("op", "category", "program", "framework_op")
STATUSES = ("slower", "faster", "added", "removed", "unchanged")
SMALL_BUFFERS = "small buffers (< 16 KiB)"
PART_NAMES = {"duration_us": "Step time", **NAMES}
"""The step table's columns by the names the users read (the step breakdown's)."""
OP_COLUMNS = ["program", "category", "name", "time_before_us", "time_after_us", "change_us",
              "status", "change_pct", "change_se", "name_after", "matched_by", "occurrences_before",
              "occurrences_after", "flops_utilization_before", "flops_utilization_after",
              "bandwidth_utilization_before", "bandwidth_utilization_after", "fingerprint"]
_NAME = re.compile(r"%[\w.\-]+")
_LHS = re.compile(r"^\s*%[\w.\-]+\s*=\s*")
_METADATA = re.compile(r",?\s*metadata=\{(?:[^{}]|\{[^{}]*\})*\}")
_NUMBERED = re.compile(r"(%[\w\-]+?)(?:\.\d+)+\b")
_DIMS = re.compile(r"\[[\d,]*\]")
_NATURAL = re.compile(r"(\d+)")
MAIN_SPACE = "HBM"
"""memory.py's name of XLA's memory space 0, the device's main memory."""
DEVICE_MEMORY = {"CPU": "RAM", "GPU": "GPU memory"}
"""What space 0 is on devices other than a TPU."""


@dataclass(frozen=True)
class Run:
    """One side of a comparison: its profile and the label the tables use."""

    profile: Profile
    label: str


class Comparison:
    """`before` against `after`; see the module doc for how steps and ops are matched."""

    def __init__(self, before: Profile, after: Profile, threshold: float = THRESHOLD,
                 floor_us: float = FLOOR_US, k: float = K):
        if not 0 <= threshold < 1:
            raise ValueError(f"threshold is a fraction of an op's time in [0, 1), not {threshold}")
        if not k >= 0:
            raise ValueError(f"k is a number of standard errors, >= 0, not {k}")
        self.before = Run(before, "before")
        self.after = Run(after, "after")
        self.threshold = float(threshold)
        self.floor_us = float(floor_us)
        self.k = float(k)

    # ---- steps ----------------------------------------------------------------------------
    def _step_table(self, run: Run) -> pd.DataFrame:
        steps = analyze_input_pipeline(run.profile).steps
        if not len(steps):
            raise ProfileError(f"{run.profile.source} ({run.label}) has no steps, so step "
                               f"times cannot be compared.\n{HOW_TO_MARK}")
        return steps

    def _steps_found(self, run: Run) -> int:
        """The steps of a run's op table: every step found, counted by XProf's rule or not."""
        self._step_table(run)  # a run without steps is refused
        return len(analyze_input_pipeline(run.profile).step_markers.table)

    def steps(self) -> pd.DataFrame:
        """One row per step position: each run's step number, time and breakdown (us), the
        change and its status (`added` / `removed` where one run has more steps)."""
        b, a = self._step_table(self.before), self._step_table(self.after)
        n = max(len(b), len(a))
        out = pd.DataFrame({"step": np.arange(n)})
        out["step_before"] = pd.array(list(b["step"]) + [None] * (n - len(b)), dtype="Int64")
        out["step_after"] = pd.array(list(a["step"]) + [None] * (n - len(a)), dtype="Int64")
        for column in ("duration_us", *STEP_PARTS):
            stem = column.removesuffix("_us")
            out[f"{stem}_before_us"] = _padded(b[column], n)
            out[f"{stem}_after_us"] = _padded(a[column], n)
        out["change_us"] = out["duration_after_us"] - out["duration_before_us"]
        out["change_pct"] = 100 * out["change_us"] / out["duration_before_us"]
        spread = math.hypot(_spread_of(b["duration_us"]), _spread_of(a["duration_us"]))
        with np.errstate(divide="ignore", invalid="ignore"):
            out["change_se"] = out["change_us"] / spread if spread else math.nan
        out["status"] = self._status(out["duration_before_us"], out["duration_after_us"],
                                     out["change_se"])
        return out

    def most_changed_step(self) -> int:
        """The step position in both runs whose time changed most (0 without steps in both)."""
        try:
            steps = self.steps()
        except ProfileError:
            return 0
        change = steps["change_us"].abs().to_numpy(np.float64)
        return int(np.nanargmax(change)) if np.isfinite(change).any() else 0

    def step_breakdown(self) -> pd.DataFrame:
        """The average step of each run by part (the step time, then the step breakdown's
        categories that hold time in either run): ms before, after, the change, the change in
        per cent of the step time before, the change in standard errors of the runs' per-step
        values (`change_se`) and its status."""
        b, a = self._step_table(self.before), self._step_table(self.after)
        rows = []
        base = float(b["duration_us"].mean())
        for column, label in PART_NAMES.items():
            if not (b[column].to_numpy().any() or a[column].to_numpy().any()):
                continue  # neither run spends time there (a CPU run's device parts)
            before, after = float(b[column].mean()) / 1000, float(a[column].mean()) / 1000
            error = 1.253 * math.hypot(_spread_of(b[column]) / math.sqrt(len(b)),
                                       _spread_of(a[column]) / math.sqrt(len(a)))
            moved = float(a[column].median() - b[column].median())
            rows.append({"part": label, "before_ms": before, "after_ms": after,
                         "change_ms": after - before,
                         "change_pct_of_step": 100 * (after - before) * 1000 / base
                         if base else math.nan,
                         "change_se": moved / error if error else math.nan})
        out = pd.DataFrame(rows)
        out["status"] = self._status(out["before_ms"] * 1000, out["after_ms"] * 1000,
                                     out["change_se"])
        return out

    def step_offset_us(self, step: int) -> float:
        """How much later step position `step` starts in `after` than in `before` (us)."""
        b, a = self._step_table(self.before), self._step_table(self.after)
        if not (0 <= step < min(len(b), len(a))):
            raise ProfileError(f"no step {step} in both runs: before has {len(b)} steps, "
                               f"after {len(a)}.")
        return float(a["start_us"].iat[step] - b["start_us"].iat[step])

    def step_span_us(self, step: int, run: str = "before") -> tuple[float, float]:
        """(start, end) of step position `step` in one run, in that run's microseconds."""
        table = self._step_table(self.before if run == "before" else self.after)
        if not 0 <= step < len(table):
            raise ProfileError(f"no step {step} in {run}: it has {len(table)} steps.")
        start = float(table["start_us"].iat[step])
        return start, start + float(table["duration_us"].iat[step])

    # ---- ops ------------------------------------------------------------------------------
    def ops(self, by: str = "op", per_step: bool = False) -> pd.DataFrame:
        """The op profile diff, largest absolute change first (see the module doc).

        by: "op" (a row per op), "category", "program" or "framework_op" (a row per group);
        per_step: divide each run's times by its number of steps (for runs of different
        lengths). Columns: OP_COLUMNS (`name` is the group for a grouping; `name_after`,
        `matched_by` and `fingerprint` are for ops).
        """
        if by not in GROUPINGS:
            raise ValueError(f"by must be one of {', '.join(GROUPINGS)}, not {by!r}")
        b, a = self._ops(self.before, per_step), self._ops(self.after, per_step)
        if by == "op":
            frame = self._op_rows(b, a)
        else:
            frame = self._group_rows(b, a, by)
        frame["change_us"] = frame["time_after_us"].fillna(0) - frame["time_before_us"].fillna(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            frame["change_pct"] = 100 * frame["change_us"] / frame["time_before_us"]
        frame["change_se"] = _change_se(frame)
        frame["status"] = self._status(
            frame["time_before_us"], frame["time_after_us"], frame["change_se"],
            np.fmax(frame["occurrences_before"], frame["occurrences_after"]).to_numpy())
        order = np.argsort(-frame["change_us"].abs().to_numpy(np.float64), kind="stable")
        return frame.iloc[order][OP_COLUMNS].reset_index(drop=True)

    def _analysis(self, run: Run) -> OpProfileAnalysis:
        try:
            return analyze_op_profile(run.profile)
        except ProfileError as exc:
            raise ProfileError(f"cannot compare ops: the {run.label} run has none. {exc}") from exc

    def _ops(self, run: Run, per_step: bool) -> pd.DataFrame:
        """The op table summed by (program, name), with fingerprints and utilization inputs."""
        analysis = self._analysis(run)
        ops = analysis.ops.copy()
        strict, structural = zip(*[_fingerprints(analysis, i, row) for i, row in ops.iterrows()],
                                 strict=True) if len(ops) else ((), ())
        ops["strict"], ops["structural"] = list(strict), list(structural)
        scale = 1.0 / self._steps_found(run) if per_step else 1.0
        grouped = ops.groupby(["program", "name"], sort=False).agg(
            category=("category", "first"), framework_op=("framework_op", "first"),
            time_us=("time_us", "sum"), occurrences=("occurrences", "sum"),
            flops=("flops", "sum"), hbm_bytes=("hbm_bytes", "sum"),
            known_cost=("known_cost", "all"), strict=("strict", "first"),
            structural=("structural", "first"), log_sum=("log_time_sum", "sum"),
            log_sq_sum=("log_time_sq_sum", "sum"), samples=("occurrences", "sum")).reset_index()
        grouped["typical_us"], grouped["log_var"] = _log_spread(grouped)
        grouped["typical_us"] *= scale
        grouped["time_us"] *= scale
        grouped["occurrences"] = grouped["occurrences"] * scale
        grouped["flops"] *= scale
        grouped["hbm_bytes"] *= scale
        grouped.attrs["device"] = analysis.device
        return grouped

    def _op_rows(self, b: pd.DataFrame, a: pd.DataFrame) -> pd.DataFrame:
        pairs = match_ops(b, a)
        rows = []
        for i, j, how in pairs:
            left = b.iloc[i] if i >= 0 else None
            right = a.iloc[j] if j >= 0 else None
            ref = left if left is not None else right
            rows.append({
                "program": ref["program"], "category": ref["category"], "name": ref["name"],
                "name_after": right["name"] if right is not None else None,
                "matched_by": how,
                "time_before_us": left["time_us"] if left is not None else math.nan,
                "time_after_us": right["time_us"] if right is not None else math.nan,
                "occurrences_before": left["occurrences"] if left is not None else 0,
                "occurrences_after": right["occurrences"] if right is not None else 0,
                **_spread(left, "before"), **_spread(right, "after"),
                **_utilizations(left, b.attrs["device"], "before"),
                **_utilizations(right, a.attrs["device"], "after"),
                "fingerprint": _short(ref["strict"]),
            })
        return pd.DataFrame(rows, columns=[c for c in OP_COLUMNS if c not in (
            "change_us", "change_pct", "change_se", "status")] + list(_SPREAD_COLUMNS))

    def _group_rows(self, b: pd.DataFrame, a: pd.DataFrame, by: str) -> pd.DataFrame:
        sums = {"time_us": "sum", "occurrences": "sum", "flops": "sum", "hbm_bytes": "sum",
                "known_cost": "all", "category": "first", "program": "first",
                "typical_us": "sum", "weighted_var": "sum"}
        left = b.assign(weighted_var=_weighted_var(b, by)).groupby(by, sort=False).agg(sums)
        right = a.assign(weighted_var=_weighted_var(a, by)).groupby(by, sort=False).agg(sums)
        names = list(dict.fromkeys([*left.index, *right.index]))
        rows = []
        for name in names:
            lrow = left.loc[name] if name in left.index else None
            rrow = right.loc[name] if name in right.index else None
            rows.append({
                "program": name if by == "program" else "",
                "category": name if by == "category" else "",
                "name": name, "name_after": None, "matched_by": by,
                "time_before_us": lrow["time_us"] if lrow is not None else math.nan,
                "time_after_us": rrow["time_us"] if rrow is not None else math.nan,
                "occurrences_before": lrow["occurrences"] if lrow is not None else 0,
                "occurrences_after": rrow["occurrences"] if rrow is not None else 0,
                **_spread(lrow, "before", "weighted_var"),
                **_spread(rrow, "after", "weighted_var"),
                **_utilizations(lrow, b.attrs["device"], "before"),
                **_utilizations(rrow, a.attrs["device"], "after"),
                "fingerprint": "",
            })
        return pd.DataFrame(rows)

    def kernels(self) -> pd.DataFrame:
        """GPU kernels by (kernel name, op) in both runs: time (us), occurrences, the change and
        its status, largest change first; empty when neither run has GPU kernels."""
        sides = []
        for run in (self.before, self.after):
            stats = kernel_stats(run.profile)
            sides.append(stats.groupby(["kernel_name", "op_name"], sort=False).agg(
                time_us=("total_duration_us", "sum"), occurrences=("occurrences", "sum")))
        merged = sides[0].merge(sides[1], how="outer", left_index=True, right_index=True,
                                suffixes=("_before", "_after"), sort=False).reset_index()
        out = pd.DataFrame({"kernel_name": merged["kernel_name"], "op_name": merged["op_name"],
                            "time_before_us": merged["time_us_before"].astype(np.float64),
                            "time_after_us": merged["time_us_after"].astype(np.float64),
                            "occurrences_before": merged["occurrences_before"].fillna(0),
                            "occurrences_after": merged["occurrences_after"].fillna(0)})
        out.insert(4, "change_us", out["time_after_us"].fillna(0)
                   - out["time_before_us"].fillna(0))
        out.insert(5, "status", self._status(out["time_before_us"], out["time_after_us"]))
        order = np.argsort(-out["change_us"].abs().to_numpy(np.float64), kind="stable")
        return out.iloc[order].reset_index(drop=True)

    # ---- PyTorch traces -------------------------------------------------------------------
    @cached_property
    def kineto(self) -> bool:
        """Whether both runs are PyTorch profiler traces (compared by `trace_diff`)."""
        return is_kineto(self.before.profile) and is_kineto(self.after.profile)

    def trace_scope(self, rank_before: int | list[int] | None = None,
                    rank_after: int | list[int] | None = None,
                    iteration_before: int | list[int] | None = None,
                    iteration_after: int | list[int] | None = None) -> dict[str, list[int]]:
        """The ranks and profiler steps `trace_diff` compares (the first of each by default)."""
        ranks_b, steps_b = trace_scope(self.before.profile, rank_before, iteration_before)
        ranks_a, steps_a = trace_scope(self.after.profile, rank_after, iteration_after)
        return {"ranks_before": ranks_b, "steps_before": steps_b, "ranks_after": ranks_a,
                "steps_after": steps_a}

    def trace_diff(self, device: str = "all", rank_before: int | list[int] | None = None,
                   rank_after: int | list[int] | None = None,
                   iteration_before: int | list[int] | None = None,
                   iteration_after: int | list[int] | None = None) -> pd.DataFrame:
        """Ops and kernels of two PyTorch traces by name, as HTA's TraceDiff.compare_traces
        finds them (TRACE_COLUMNS, largest change of time first): one profiler step of one
        rank of each run (default: the first of each), `device` "all", "cpu" or "gpu"."""
        b = trace_ops(self.before.profile, rank_before, iteration_before, device)
        a = trace_ops(self.after.profile, rank_after, iteration_after, device)
        merged = b.merge(a, on="name", how="outer", suffixes=("_before", "_after"), sort=True)
        count_b = merged["occurrences_before"].fillna(0).to_numpy(np.int64)
        count_a = merged["occurrences_after"].fillna(0).to_numpy(np.int64)
        out = pd.DataFrame({
            "name": merged["name"],
            "device": merged["device_before"].fillna(merged["device_after"]),
            "occurrences_before": count_b, "occurrences_after": count_a,
            "count_change": np.select([count_b == 0, count_a == 0, count_a > count_b,
                                       count_a < count_b], COUNT_CHANGES[:4],
                                      COUNT_CHANGES[4]).astype(object),
            "time_before_us": merged["time_us_before"].astype(np.float64),
            "time_after_us": merged["time_us_after"].astype(np.float64)})
        out["change_us"] = out["time_after_us"].fillna(0) - out["time_before_us"].fillna(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["change_pct"] = 100 * out["change_us"] / out["time_before_us"]
        out["status"] = self._status(out["time_before_us"], out["time_after_us"])
        order = np.argsort(-out["change_us"].abs().to_numpy(np.float64), kind="stable")
        return out.iloc[order][TRACE_COLUMNS].reset_index(drop=True)

    def _status(self, before: pd.Series, after: pd.Series, change_se: Any = None,
                occurrences: Any = None) -> np.ndarray:
        """added / removed / unchanged / slower / faster, as the module doc says: by `k`
        standard errors where `change_se` is known, else by `threshold`; never a change under
        `floor_us` per occurrence (`occurrences`: the larger count of the two runs)."""
        b, a = before.to_numpy(np.float64), after.to_numpy(np.float64)
        change = a - b
        se = np.full(len(b), np.nan) if change_se is None else np.asarray(change_se, np.float64)
        count = np.ones(len(b)) if occurrences is None else np.fmax(
            np.asarray(occurrences, np.float64), 1)
        with np.errstate(invalid="ignore"):
            small = np.abs(change) < self.floor_us * count
            noise = np.where(np.isnan(se), np.abs(change) < self.threshold * np.fmax(b, a),
                             (np.abs(se) <= self.k) | (np.sign(se) != np.sign(change)))
        return np.select([np.isnan(b), np.isnan(a), small | noise, change > 0],
                         ["added", "removed", "unchanged", "slower"], "faster").astype(object)

    # ---- memory ---------------------------------------------------------------------------
    def memory(self) -> pd.DataFrame:
        """Peak memory per module name and memory space in each run (MiB), with the change:
        `grew`, `shrank`, `unchanged`, or `added` / `removed` for a module of one run only."""
        b, a = _peaks(self.before.profile), _peaks(self.after.profile)
        keys = ["module", "memory_space"]
        merged = b.merge(a, on=keys, how="outer", suffixes=("_before", "_after"), sort=False)
        out = merged[keys].copy()
        out["memory_space"] = out["memory_space"].map(self.space_name)
        out["peak_before_mib"] = merged["peak_bytes_before"] / MIB
        out["peak_after_mib"] = merged["peak_bytes_after"] / MIB
        out["change_mib"] = out["peak_after_mib"].fillna(0) - out["peak_before_mib"].fillna(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["change_pct"] = 100 * out["change_mib"] / out["peak_before_mib"]
        out["status"] = _size_status(out["peak_before_mib"], out["peak_after_mib"],
                                     ("grew", "shrank", "added", "removed"))
        out["ran_before"] = merged["ran_before"].fillna(False).astype(bool)
        out["ran_after"] = merged["ran_after"].fillna(False).astype(bool)
        order = np.lexsort((-out["change_mib"].abs().to_numpy(), ~(out["ran_before"]
                                                                    | out["ran_after"])))
        return out.iloc[order].reset_index(drop=True)

    @cached_property
    def default_module(self) -> str | None:
        """The module the buffer diff looks at by default: the training step of `after`
        (memory_viewer's default choice), when `before` has a module of that name too."""
        for run in (self.after, self.before):
            peaks = _peaks(run.profile)
            if not len(peaks):
                continue
            ids = dict(zip(peaks["program_id"], peaks["module"], strict=True))
            protos = {pid: run.profile.hlo_proto_bytes(int(pid)) for pid in ids}
            try:
                return ids[default_module(protos)]
            except ProfileError:
                continue
        return None

    def space_name(self, space: str) -> str:
        """A memory space as the runs' devices name it (module doc): `RAM` for a CPU's main
        memory, not HBM; both names, before's first, where the two devices differ."""
        names = dict.fromkeys(DEVICE_MEMORY.get(self._device_kind(run), space)
                              if space == MAIN_SPACE else space
                              for run in (self.before, self.after))
        return " / ".join(names)

    def _device_kind(self, run: Run) -> str:
        try:
            return self._analysis(run).device.kind
        except ProfileError:
            return ""

    def _space_of(self, name: str | None) -> str:
        """memory.py's name of a space given as `space_name` writes it (None: the main one)."""
        if name is None or name == self.space_name(MAIN_SPACE):
            return MAIN_SPACE
        return name

    def buffers(self, module: str | None = None, memory_space: str | None = None
                ) -> pd.DataFrame:
        """Buffers live at each run's peak of `module` (default: `default_module`) in
        `memory_space` (default: the device's main memory, `space_name`), matched by
        the name of the instruction that defines them (through the op matching, so a
        renumbered fusion keeps its buffer): size before and after (MiB), the change, and
        `grew`, `shrank`, `unchanged`, `new` or `gone`; the most grown first. Buffers under
        16 KiB are one row, as the memory viewer lumps them."""
        module = module or self.default_module
        if module is None:
            raise ProfileError("neither run carries an HLO module with buffer assignment, so "
                               "there are no buffers to compare.")
        renamed = self._renamed(module)
        label = memory_space or self.space_name(MAIN_SPACE)
        memory_space = self._space_of(memory_space)
        parts = []
        for run in (self.before, self.after):
            analysis = _module_analysis(run.profile, module, memory_space)
            frame = analysis.buffers() if analysis is not None else pd.DataFrame(
                columns=["name", "size_bytes", "shape"])
            key = frame["name"].map(lambda n: SMALL_BUFFERS if n.startswith("small (") else n)
            if run is self.before:
                key = key.map(lambda n: _renamed_buffer(n, renamed))
            parts.append(frame.assign(name=key).groupby("name", sort=False).agg(
                size_bytes=("size_bytes", "sum"), shape=("shape", "first")))
        if all(not len(p) for p in parts):
            raise ProfileError(f"no module named {module!r} with buffers in {label} in "
                               "either run.")
        merged = parts[0].merge(parts[1], how="outer", left_index=True, right_index=True,
                                suffixes=("_before", "_after"), sort=False)
        out = pd.DataFrame({"name": merged.index,
                            "shape_before": merged["shape_before"].to_numpy(),
                            "shape_after": merged["shape_after"].to_numpy(),
                            "size_before_mib": merged["size_bytes_before"].to_numpy(
                                np.float64) / MIB,
                            "size_after_mib": merged["size_bytes_after"].to_numpy(
                                np.float64) / MIB})
        out["change_mib"] = out["size_after_mib"].fillna(0) - out["size_before_mib"].fillna(0)
        out["status"] = _size_status(out["size_before_mib"], out["size_after_mib"],
                                     ("grew", "shrank", "new", "gone"))
        return out.sort_values("change_mib", ascending=False, kind="stable").reset_index(
            drop=True)

    def _renamed(self, module: str) -> dict[str, str]:
        """Before's op name -> after's, for ops of `module` matched under another name."""
        try:
            ops = self.ops()
        except ProfileError:
            return {}
        moved = ops[(ops["program"] == module) & (ops["matched_by"] == "fingerprint")]
        return dict(zip(moved["name"], moved["name_after"], strict=True))

    # ---- words ----------------------------------------------------------------------------
    def summary(self) -> str:
        """The change in plain words: step time and the parts that moved, ops, peak memory."""
        sentences = [self._steps_sentence(), self._ops_sentence(), self._memory_sentence()]
        return " ".join(s for s in sentences if s)

    def _steps_sentence(self) -> str:
        try:
            table = self.step_breakdown()
            counts = len(self._step_table(self.before)), len(self._step_table(self.after))
        except ProfileError as exc:
            return str(exc).split("\n")[0]
        total = table.iloc[0]
        first = (f"Step time {total['before_ms']:.1f} -> {total['after_ms']:.1f} ms"
                 f"{_signed_pct(total['after_ms'], total['before_ms'])}")
        if total["status"] == "unchanged":
            first += " (within the runs' step-to-step spread)"
        words = [first]
        parts = table.iloc[1:]
        moved = parts[parts["status"] != "unchanged"].copy()
        moved = moved.iloc[np.argsort(-moved["change_ms"].abs().to_numpy(), kind="stable")]
        words += [f"{row['part']} {row['change_ms']:+.1f} ms" for _, row in moved.iterrows()]
        sentence = "; ".join(words) + "."
        if counts[0] != counts[1]:
            sentence += (f" The runs have {counts[0]} and {counts[1]} steps: op times are "
                         "totals, compare them with ops(per_step=True).")
        return sentence

    def _ops_sentence(self) -> str:
        if self.kineto:
            return self._trace_sentence()
        try:
            ops = self.ops()
        except ProfileError as exc:
            return str(exc).split("\n")[0]
        counts = ops["status"].value_counts()
        said = [f"{int(counts[s])} {s}" for s in STATUSES[:4] if counts.get(s, 0)]
        if not said:
            return f"Ops: all {len(ops)} unchanged (within their own run-to-run spread)."
        if counts.get("unchanged", 0):
            said.append(f"{int(counts['unchanged'])} unchanged")
        top = ops[ops["status"] != "unchanged"].iloc[0]
        renamed = (f" (now {top['name_after']})" if isinstance(top["name_after"], str)
                   and top["name_after"] != top["name"] else "")
        return (f"Ops: {', '.join(said)}; the largest change is {top['name']}{renamed} in "
                f"{top['program']}, {top['change_us'] / 1000:+.2f} ms ({top['status']}).")

    def _trace_sentence(self) -> str:
        try:
            scope = self.trace_scope()
            diff = self.trace_diff()
        except ProfileError as exc:
            return str(exc).split("\n")[0]
        where = (f"rank {_ints(scope['ranks_before'])} step {_ints(scope['steps_before'])} "
                 f"against rank {_ints(scope['ranks_after'])} step "
                 f"{_ints(scope['steps_after'])}")
        counts = diff["count_change"].value_counts()
        said = ", ".join(f"{int(counts[c])} {c}" for c in COUNT_CHANGES if counts.get(c, 0))
        if not len(diff):
            return f"Ops and kernels ({where}): none in either run."
        top = diff.iloc[0]
        return (f"Ops and kernels ({where}), by how often they ran: {said}; the largest change "
                f"of time is {_short_name(top['name'])}, {top['change_us'] / 1000:+.2f} ms "
                f"({top['status']}).")

    def _memory_sentence(self) -> str:
        module = self.default_module
        if module is None:
            return ""
        memory = self.memory()
        row = memory[memory["module"] == module]
        main = self.space_name(MAIN_SPACE)
        row = row[row["memory_space"] == main] if (row["memory_space"] == main).any() else row
        if not len(row):
            return ""
        r = row.iloc[0]
        if r["status"] == "unchanged":
            return f"Peak memory of {module} ({r['memory_space']}) unchanged at " \
                   f"{r['peak_before_mib']:.2f} MiB."
        if r["status"] in ("added", "removed"):
            return ""
        change = _signed_pct(r["peak_after_mib"], r["peak_before_mib"])
        return (f"Peak memory of {module} ({r['memory_space']}) {r['peak_before_mib']:.2f} -> "
                f"{r['peak_after_mib']:.2f} MiB{change}.")


# ---- op matching ------------------------------------------------------------------------------
def normalize_hlo(text: str) -> str:
    """HLO text without the names that change between compilations: `%name`s and metadata."""
    return _NAME.sub("%", _LHS.sub("", _METADATA.sub("", text))).strip()


def structure_hlo(text: str) -> str:
    """HLO text as the structural fingerprint reads it: operand names without their number,
    shapes without sizes."""
    text = _NUMBERED.sub(r"\1", _LHS.sub("", _METADATA.sub("", text)))
    return _DIMS.sub(_sizeless, text).strip()


def _sizeless(match: re.Match) -> str:
    """`[512,16]` -> `[#,#]`: the rank without the sizes."""
    return "[" + ",".join("#" for size in match.group(0)[1:-1].split(",") if size) + "]"


def _fingerprints(analysis: OpProfileAnalysis, index: Any, row: pd.Series) -> tuple[str, str]:
    """(strict, structural) fingerprint texts of one op; ("", "") without HLO."""
    expression = str(row.get("expression") or "")
    if not expression or expression == row["name"]:
        return "", ""
    strict = [normalize_hlo(expression)]
    if row.get("fused"):
        strict += [normalize_hlo(str(e)) for e in analysis.fused_ops(index)["expression"]]
    return "\n".join(strict), structure_hlo(expression)


def _natural(name: str) -> list:
    return [int(p) if p.isdigit() else p for p in _NATURAL.split(name)]


def match_ops(before: pd.DataFrame, after: pd.DataFrame) -> list[tuple[int, int, str]]:
    """Pairs (row in before, row in after, how) for ops of two runs; -1 for no partner.

    Both frames have `program`, `name`, `strict` and `structural` (fingerprint texts, "" when
    unknown). Rounds as in the module doc; within a round, candidates of one key pair in the
    natural order of their names.
    """
    left = set(range(len(before)))
    right = set(range(len(after)))
    pairs: list[tuple[int, int, str]] = []

    def round_(key, how: str, usable) -> None:
        groups: dict[Any, list[list[int]]] = {}
        for side, frame, free in ((0, before, left), (1, after, right)):
            for i in sorted(free):
                row = frame.iloc[i]
                if usable(row):
                    groups.setdefault(key(row), [[], []])[side].append(i)
        for lhs, rhs in groups.values():
            lhs.sort(key=lambda i: _natural(before.iloc[i]["name"]))
            rhs.sort(key=lambda i: _natural(after.iloc[i]["name"]))
            for i, j in zip(lhs, rhs, strict=False):
                pairs.append((i, j, how))
                left.discard(i)
                right.discard(j)

    round_(lambda r: (r["program"], r["name"], r["strict"]), "name", _has_hlo)
    round_(lambda r: (r["program"], r["strict"]), "fingerprint", _has_hlo)
    round_(lambda r: (r["program"], r["name"], r["structural"]), "name", _has_hlo)
    round_(lambda r: (r["program"], r["structural"]), "fingerprint", _has_hlo)
    # Names alone where one run knows no HLO for the op.
    without = {(before.iloc[i]["program"], before.iloc[i]["name"]) for i in left
               if not before.iloc[i]["strict"]}
    without |= {(after.iloc[j]["program"], after.iloc[j]["name"]) for j in right
                if not after.iloc[j]["strict"]}
    round_(lambda r: (r["program"], r["name"]), "name",
           lambda r: (r["program"], r["name"]) in without)
    pairs += [(i, -1, "") for i in sorted(left)] + [(-1, j, "") for j in sorted(right)]
    return pairs


def _has_hlo(row: pd.Series) -> bool:
    return bool(row["strict"])


def _short(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12] if text else ""


_SPREAD_COLUMNS = ("typical_before_us", "typical_after_us", "log_var_before", "log_var_after")


def _log_spread(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per op: its typical total (occurrences x the time of the mean log, us) and the
    variance of its log total (variance of a log occurrence / occurrences; NaN under two)."""
    n = ops["samples"].to_numpy(np.float64)
    s1, s2 = ops["log_sum"].to_numpy(np.float64), ops["log_sq_sum"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s1 / n
        var = np.maximum(s2 - s1 * mean, 0) / (n - 1)
    var[n < 2] = np.nan
    return n * np.expm1(np.nan_to_num(mean)) / PS_PER_US, var / n


def _weighted_var(ops: pd.DataFrame, by: str) -> np.ndarray:
    """Each op's share of its group's log-total variance (the delta method: its variance times
    the square of its share of the group's typical time); 0 where the op's is unknown."""
    typical = ops["typical_us"].to_numpy(np.float64)
    total = ops.groupby(by, sort=False)["typical_us"].transform("sum").to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, typical / total, 0.0)
    return np.nan_to_num(ops["log_var"].to_numpy(np.float64)) * share ** 2


def _spread(row: pd.Series | None, side: str, var: str = "log_var") -> dict[str, float]:
    if row is None:
        return {f"typical_{side}_us": math.nan, f"log_var_{side}": math.nan}
    value = float(row[var])
    return {f"typical_{side}_us": float(row["typical_us"]),
            f"log_var_{side}": value if var == "log_var" or value > 0 else math.nan}


def _change_se(frame: pd.DataFrame) -> np.ndarray:
    """The change of the log typical total in standard errors of both runs (module doc); a
    side without a spread borrows the other's; NaN where neither has one."""
    vb = frame["log_var_before"].to_numpy(np.float64)
    va = frame["log_var_after"].to_numpy(np.float64)
    var = np.where(np.isnan(vb), 2 * va, np.where(np.isnan(va), 2 * vb, vb + va))
    tb = frame["typical_before_us"].to_numpy(np.float64)
    ta = frame["typical_after_us"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, np.log(ta / tb) / np.sqrt(var), np.nan)


def _spread_of(values: pd.Series) -> float:
    """1.4826 x the median absolute deviation (module doc); 0 under two values."""
    if len(values) < 2:
        return 0.0
    x = values.to_numpy(np.float64)
    return 1.4826 * float(np.median(np.abs(x - np.median(x))))


def _utilizations(row: pd.Series | None, device: Any, side: str) -> dict[str, float]:
    flops_util = bw_util = math.nan
    if row is not None and row["known_cost"] and row["time_us"] > 0:
        seconds = row["time_us"] / 1e6
        flops_util = min(1.0, row["flops"] / seconds / device.peak_flops)
        bw_util = min(1.0, row["hbm_bytes"] / seconds / device.peak_bandwidth)
    return {f"flops_utilization_{side}": flops_util, f"bandwidth_utilization_{side}": bw_util}


# ---- memory -----------------------------------------------------------------------------------
def _peaks(profile: Profile) -> pd.DataFrame:
    """Per module name and memory space: the peak of the module to show (module doc)."""
    return profile.memo(("compare_peaks",), lambda: _build_peaks(profile))


def _ran_programs(profile: Profile) -> set[int]:
    try:
        ops = analyze_op_profile(profile).ops
    except ProfileError:
        return set()
    return {int(p) for p in ops["program_id"]}


def _build_peaks(profile: Profile) -> pd.DataFrame:
    ran = _ran_programs(profile)
    rows = []
    for pid, name in zip(profile.hlo_modules["program_id"], profile.hlo_modules["name"],
                         strict=True):
        data = profile.hlo_proto_bytes(int(pid))
        for space in memory_spaces(data):
            try:
                peak = analyze_memory(data, space, where=profile.source,
                                      program_id=int(pid)).summary["peak_bytes"]
            except ProfileError:
                continue
            rows.append({"module": name, "memory_space": space, "program_id": int(pid),
                         "peak_bytes": int(peak), "ran": int(pid) in ran})
    frame = pd.DataFrame(rows, columns=["module", "memory_space", "program_id", "peak_bytes",
                                        "ran"])
    if not len(frame):
        return frame
    frame = frame.sort_values(["ran", "peak_bytes"], ascending=False, kind="stable")
    return frame.drop_duplicates(["module", "memory_space"]).reset_index(drop=True)


def _module_analysis(profile: Profile, module: str, memory_space: str) -> Any:
    peaks = _peaks(profile)
    row = peaks[(peaks["module"] == module) & (peaks["memory_space"] == memory_space)]
    if not len(row):
        return None
    pid = int(row["program_id"].iat[0])
    return analyze_memory(profile.hlo_proto_bytes(pid), memory_space, where=profile.source,
                          program_id=pid)


# ---- small helpers ----------------------------------------------------------------------------
def _renamed_buffer(name: str, renamed: dict[str, str]) -> str:
    """A buffer `instruction{index}` under the instruction's name in the other run."""
    instruction, brace, index = name.partition("{")
    return renamed.get(instruction, instruction) + brace + index


def _ints(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def _short_name(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _padded(values: pd.Series, n: int) -> np.ndarray:
    out = np.full(n, np.nan)
    out[:len(values)] = values.to_numpy(np.float64)
    return out


def _size_status(before: pd.Series, after: pd.Series, words: tuple[str, str, str, str]
                 ) -> np.ndarray:
    b, a = before.to_numpy(np.float64), after.to_numpy(np.float64)
    grew, shrank, only_after, only_before = words
    return np.select([np.isnan(b), np.isnan(a), a > b, a < b],
                     [only_after, only_before, grew, shrank], "unchanged").astype(object)


def _signed_pct(after: float, before: float) -> str:
    if not before or not np.isfinite(before):
        return ""
    return f", {100 * (after - before) / before:+.0f}%"
