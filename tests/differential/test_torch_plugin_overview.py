"""The Overview's step-time breakdown and GPU figures against PyTorch's TensorBoard plugin
(torch-tb-profiler 0.4), run live as a library on every Kineto trace of tests/data/public.

The plugin loads a copy of each trace with our chosen differences (docs/pytorch.md, "The
plugin's Overview") applied to its input, so that what remains must match; none is a
tolerance beyond float64 rounding of microseconds:

- MODERN_NAMES: the plugin knows Kineto's category names of 2021; today's runtime and driver
  calls (`cuda_runtime`, `cuda_driver`) are renamed `Runtime`, steps and DataLoader spans
  recorded as `user_annotation` are given the `cpu_op` category it reads them under, and the
  GPU copies of annotations (`gpu_user_annotation`, which it would count as extra steps) are
  left out;
- COMMUNICATION_BY_FAMILY: a kernel of a communication family (kernel_families) is a
  collective for us; the plugin is told so the way it finds collectives, by a zero-length
  host op `nccl:all_reduce` sharing the kernel's External id;
- EXACT_TIMES: the plugin reads epoch microseconds as float64 (0.25 us apart at 1.7e15 us);
  its copy is rebased to the trace's first complete event, read exactly (decimal), so both count the
  same instants;
- NO_HOST_OPS: on a trace without any CPU op or step the plugin makes one step from +inf to
  -inf (a negative length); ours has no steps.

Times agree to 1 ns (float64 sums of rebased microseconds).
"""

from __future__ import annotations

import decimal
import gzip
import json
import logging
import os
from functools import cache
from pathlib import Path
from typing import Self

import numpy as np
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_families import is_communication
from xprof_widgets.analysis.kineto.step_breakdown import PART_COLUMNS, torch_step_breakdown

if os.environ.get("XPROF_WIDGETS_REQUIRE_REFERENCES") == "1":  # `make test`: must be there
    from torch_tb_profiler.profiler import data
else:
    data = pytest.importorskip("torch_tb_profiler.profiler.data",
                               reason="torch-tb-profiler is not installed (pip install "
                               "torch-tb-profiler)")

PUBLIC = Path(__file__).parents[1] / "data" / "public"
TRACES = sorted(p for p in PUBLIC.rglob("*.json*") if "_et." not in p.name)
_RUNTIME = {"cuda_runtime", "cuda_driver"}
_AS_CPU_OP = ("ProfilerStep#", "enumerate(DataLoader)#", "enumerate(DataPipe)#")


class _Exact(float):
    """A JSON number as a float that keeps its text, for exact arithmetic on timestamps."""

    text: str

    def __new__(cls, text: str) -> Self:
        number = super().__new__(cls, text)
        number.text = text
        return number


def _exact(value: object) -> decimal.Decimal:
    return decimal.Decimal(value.text if isinstance(value, _Exact) else value)


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=_Exact)


def plugin_input(trace: dict, names: bool = True, families: bool = True,
                 exact: bool = True) -> dict:
    """The trace as the plugin is given it: our chosen differences applied (module doc):
    MODERN_NAMES, COMMUNICATION_BY_FAMILY and EXACT_TIMES, each unless switched off."""
    events = [e for e in trace["traceEvents"] if isinstance(e, dict)]
    base = min((_exact(e["ts"]) for e in events if e.get("ph") == "X" and "ts" in e),
               default=0) if exact else 0  # metadata events may stand at ts 0
    out, next_id = [], 1 << 40
    for e in events:
        e = dict(e)
        cat, name = e.get("cat"), str(e.get("name", ""))
        if names and cat == "gpu_user_annotation":
            continue
        if names and cat in _RUNTIME:
            e["cat"] = "Runtime"
        elif names and cat == "user_annotation" and name.startswith(_AS_CPU_OP):
            e["cat"] = "cpu_op"
        if "ts" in e:
            e["ts"] = float(_exact(e["ts"]) - base)
        if families and cat in ("kernel", "Kernel") and is_communication(name):
            next_id += 1
            e["args"] = {**e.get("args", {}), "External id": next_id}
            out.append({"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": -1,
                        "tid": -1, "ts": e["ts"], "dur": 0, "args": {"External id": next_id}})
        out.append(e)
    return {**trace, "traceEvents": out}


def _run(trace: dict):
    """The plugin's parse and overview (its `process`, not the other views' `analyze`)."""
    logging.disable(logging.WARNING)  # it logs every odd event
    try:
        run = data.RunProfileData("worker", 0, trace)
        run.process()
        return run
    finally:
        logging.disable(logging.NOTSET)


@cache
def plugin(path: Path):
    return _run(plugin_input(_load(path)))


@cache
def ours(path: Path):
    return torch_step_breakdown(xw.open_profile(path))


def _has_host_ops(path: Path) -> bool:
    cats = {e.get("cat") for e in _load(path)["traceEvents"] if isinstance(e, dict)}
    return bool(cats & {"cpu_op", "Operator", "python", "user_annotation"})


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(PUBLIC)))
def test_step_breakdown_matches_plugin(path: Path) -> None:
    theirs, mine = plugin(path), ours(path)
    if not _has_host_ops(path):  # NO_HOST_OPS
        assert [c.costs[8] for c in theirs.steps_costs] == [-float(2 ** 64 - 1)] or \
            theirs.steps_costs[0].costs[8] < 0
        assert mine.steps.empty
        return
    assert list(mine.steps["step"]) == theirs.steps_names
    their_parts = np.array([c.costs[:8] for c in theirs.steps_costs], np.float64)
    their_total = np.array([c.costs[8] for c in theirs.steps_costs], np.float64)
    np.testing.assert_allclose(mine.steps[PART_COLUMNS].to_numpy(), their_parts, rtol=0,
                               atol=1e-3)
    np.testing.assert_allclose(mine.steps["duration_us"].to_numpy(), their_total, rtol=0,
                               atol=1e-3)
    # the parts fill each step exactly
    np.testing.assert_allclose(mine.steps[PART_COLUMNS].sum(axis=1), mine.steps["duration_us"])


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(PUBLIC)))
def test_gpu_figures_match_plugin(path: Path) -> None:
    theirs, mine = plugin(path).gpu_metrics_parser, ours(path).gpu
    if not _has_host_ops(path):  # NO_HOST_OPS: the plugin divides by a negative span
        assert mine.empty
        return
    assert sorted(theirs.gpu_ids) == mine["device"].tolist()
    for row in mine.itertuples():
        expected = (theirs.gpu_utilization[row.device],
                    theirs.avg_approximated_sm_efficiency_per_device[row.device],
                    theirs.avg_occupancy_per_device[row.device])
        got = (row.gpu_utilization, row.est_sm_efficiency, row.est_achieved_occupancy_pct)
        for e, g in zip(expected, got, strict=True):
            if e is None:
                assert g is None or np.isnan(g)
            else:
                assert g == pytest.approx(e, rel=1e-9, abs=1e-12)


DLRM = PUBLIC / "param/dlrm_v100_8rank/worker0_step_12.1694128201545.pt.trace.json.gz"
NS = PUBLIC / "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"


def _their_parts(path: Path, **switches: bool) -> np.ndarray:
    run = _run(plugin_input(_load(path), **switches))
    return np.array([c.costs[:8] for c in run.steps_costs], np.float64)


def test_each_difference_is_one() -> None:
    """Each difference changes what the plugin answers on a real trace: switched off, the
    plugin's figures leave ours (so none of them is applied for nothing)."""
    mine = ours(DLRM).steps[PART_COLUMNS].to_numpy()
    column = {c: k for k, c in enumerate(PART_COLUMNS)}
    # MODERN_NAMES: today's names unread, no runtime, no DataLoader (a user_annotation span)
    old = _their_parts(DLRM, names=False)
    assert old[:, column["runtime_us"]].sum() == 0 < mine[:, column["runtime_us"]].sum()
    assert old[:, column["dataloader_us"]].sum() == 0 < mine[:, column["dataloader_us"]].sum()
    # COMMUNICATION_BY_FAMILY: its NCCL kernels read as Kernel there (5.6 ms on rank 0)
    by_op = _their_parts(DLRM, families=False)
    assert mine[0, column["communication_us"]] - by_op[0, column["communication_us"]] > 5000
    assert by_op[0, column["kernel_us"]] - mine[0, column["kernel_us"]] > 5000
    # EXACT_TIMES: epoch microseconds as floats move parts by whole fractions of a microsecond
    floats = _their_parts(NS, exact=False)
    assert np.abs(floats - ours(NS).steps[PART_COLUMNS].to_numpy()).max() > 0.1
