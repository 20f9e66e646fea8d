"""The Kernel view against PyTorch's TensorBoard plugin (torch-tb-profiler 0.4.3), run live.

For every Kineto trace in tests/data/public with GPU kernels, the plugin's loader
(`RunProfileData.from_json`, as its server calls it) builds its kernel table (one row per kernel
name: its KernelParser) and each row is compared with our Kernel Stats summed over that name:
calls, total, mean, max and min duration, mean blocks per SM, mean estimated achieved occupancy
and Tensor Cores used. Every difference is a named rule of docs/kernel_stats.md, applied here to
the plugin's input or answer, so that what remains must match:

- UNSTATED_IS_UNKNOWN: the plugin counts a kernel that does not state `blocks per SM` or
  `est. achieved occupancy %` as 0 in its duration-weighted mean; we leave it out, and a row
  none of whose kernels states it is NaN (unknown), where the plugin says 0.
- BLOCKS_FROM_GRID: a kernel with a `grid` but no `blocks per SM` gets the grid's blocks over
  its GPU's `numSms` (Kineto's own formula); set so in the plugin's input.
- WIDER_TENSOR_CORES: the plugin reads Tensor Core use from XProf's old list of name parts; we
  read kernel_families (that list first, then Hopper wgmma, cuBLAS xmma, CUTLASS tensorop, AMD
  MFMA...), and say unknown where the name does not tell. Where the plugin says yes, so do we;
  where it says no, ours is no, unknown, or yes by a family after XProf's list.

Times: ours are the trace's exact picoseconds, the plugin's float microseconds of the same
decimal `dur`s: equal to a relative 1e-9.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import defaultdict
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from plugin_answers import MEANS, kernels_by_name
from references import read_json

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_families import tensor_core_family
from xprof_widgets.analysis.kernel_stats import kernel_stats

pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler, the reference for the Kernel "
                    "view, is not installed (pip install torch-tb-profiler)")
from torch_tb_profiler.profiler.data import RunProfileData

CORPUS = Path(__file__).resolve().parents[1] / "data" / "public"
KERNELS = ("kernel", "Kernel")
XPROF_LIST = "XProf's list"


def _kernels(trace: dict | list) -> list[dict]:
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    return [e for e in events or [] if isinstance(e, dict) and e.get("ph") == "X"
            and e.get("cat") in KERNELS]


def _with_kernels() -> list[Path]:
    return [p for p in sorted(CORPUS.rglob("*.json*")) if _kernels(read_json(p))]


TRACES = _with_kernels()


def _blocks_from_grid(trace: dict) -> dict:
    """BLOCKS_FROM_GRID applied to the plugin's input."""
    sms = {d.get("id"): d.get("numSms") for d in trace.get("deviceProperties") or []}
    for e in _kernels(trace):
        args = e.setdefault("args", {})
        grid, count = args.get("grid"), sms.get(args.get("device", e.get("pid")))
        if "blocks per SM" not in args and isinstance(grid, list) and len(grid) == 3 and \
                isinstance(count, int) and count > 0:
            args["blocks per SM"] = grid[0] * grid[1] * grid[2] / count
    return trace


@cache
def _reference(path: Path) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """The plugin's kernel table, and per kernel name and mean the share of its duration in
    kernels that state the value (1 where all do, 0 where none does), both after
    BLOCKS_FROM_GRID."""
    trace = _blocks_from_grid(read_json(path))
    total, stating = defaultdict(float), defaultdict(lambda: defaultdict(float))
    for e in _kernels(trace):
        total[e["name"]] += e.get("dur", 0)
        for mean, (arg, _) in MEANS.items():
            if isinstance(e["args"].get(arg), (int, float)):
                stating[e["name"]][mean] += e.get("dur", 0)
    stated = {name: {m: stating[name][m] / total[name] if total[name] else 0.0 for m in MEANS}
              for name in total}
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # it logs every overlap it finds
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its pandas calls are of an older pandas
            return RunProfileData.from_json("worker", "span", trace).kernel_stat, stated
    finally:
        logging.disable(previous)


@cache
def _ours(path: Path) -> dict[str, dict]:
    return kernels_by_name(xw.open_profile(path))


@pytest.mark.parametrize("path", TRACES, ids=[str(p.relative_to(CORPUS)) for p in TRACES])
def test_kernel_table_equals_the_plugins(path):
    (theirs, stated), ours = _reference(path), _ours(path)
    assert sorted(ours) == sorted(theirs.index)
    for name, row in theirs.iterrows():
        mine = ours[name]
        assert mine["count"] == row["count"], name
        for column in ("sum", "max", "min"):
            assert mine[column] == pytest.approx(row[column], rel=1e-9, abs=1e-9), (name, column)
        assert mine["sum"] / mine["count"] == pytest.approx(row["mean"], rel=1e-9, abs=1e-9)
        for mean in MEANS:
            share = stated[name][mean]
            weighted, weight, unknown_rows = mine[mean]
            if share == 0:  # UNSTATED_IS_UNKNOWN: none states it
                assert weight == 0 and unknown_rows and row[mean] == 0, (name, mean)
                continue
            # our rows are whole: each states the value in all its kernels or in none
            assert share == pytest.approx(1) and not unknown_rows, (name, mean, share)
            assert weighted / weight == pytest.approx(row[mean], rel=1e-9, abs=1e-12), \
                (name, mean)
        family = tensor_core_family(name)[1]
        if row["tc_used"]:  # WIDER_TENSOR_CORES
            assert mine["tc_used"] is True and family == XPROF_LIST, name
        else:
            assert mine["tc_used"] is not True or family != XPROF_LIST, name


def test_the_rules_are_needed():
    """Each named rule changes some answer: a trace whose kernels state no occupancy (the
    ROCm one) and kernels the wider Tensor Core table reads apart from XProf's list."""
    rocm = CORPUS / "hta" / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    assert (_reference(rocm)[0]["occupancy"] == 0).all()
    assert all(math.isnan(v) for v in kernel_stats(xw.open_profile(rocm))[
        "mean_est_achieved_occupancy_pct"])
    wider = {name for path in TRACES for name, row in _reference(path)[0].iterrows()
             if not row["tc_used"] and _ours(path)[name]["tc_used"] is not False}
    assert wider  # yes by a later family, or unknown
