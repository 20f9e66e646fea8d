"""HTA's communication-computation overlap and idle time breakdown on made-up GPU work, against
a plain count, and the Overview's advice from them.

On integer intervals, the overlap is the units [t, t + 1) that COMPUTATION and COMMUNICATION
both cover over the units COMMUNICATION covers; the idle split walks each stream's kernels in
order of start, one gap at a time.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xprof_widgets.analysis.kineto.gpu_time import (
    IDLE_CATEGORIES,
    GpuWork,
    StreamKernels,
    idle_split,
    idle_table,
    overlap_of,
    overlap_table,
)
from xprof_widgets.analysis.kineto.overview import gpu_advice

KINDS = ("COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER")
work_rows = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15), st.sampled_from(KINDS)),
                     min_size=1, max_size=25)
kernel_rows = st.lists(st.tuples(st.sampled_from([7, 20]), st.integers(0, 200),
                                 st.integers(0, 40), st.one_of(st.none(), st.integers(0, 240))),
                       min_size=1, max_size=25)


def _work(rows):
    return GpuWork(3, np.array([s for s, _, _ in rows], np.int64),
                   np.array([s + d for s, d, _ in rows], np.int64),
                   np.array([k for _, _, k in rows], dtype=object))


@settings(max_examples=300, deadline=None)
@given(work_rows)
def test_overlap_counts_units_both_cover(rows):
    def covers(t, kind):
        return any(k == kind and s <= t < s + d for s, d, k in rows)
    communication = sum(covers(t, "COMMUNICATION") for t in range(80))
    both = sum(covers(t, "COMMUNICATION") and covers(t, "COMPUTATION") for t in range(80))
    assert overlap_of(_work(rows)) == (communication, both)
    share = overlap_table([_work(rows)], per_us=1)["comp_comm_overlap_pctg"].iat[0]
    if communication:
        assert share == 100 * both / communication
    else:
        assert math.isnan(share)  # HTA's 0 / 0


def _kernels(rows):
    return StreamKernels(
        1, np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64),
        np.array([r[1] + r[2] for r in rows], np.int64),
        np.array([r[3] or 0 for r in rows], np.int64), np.array([r[3] is not None for r in rows]))


@settings(max_examples=300, deadline=None)
@given(kernel_rows, st.integers(1, 30))
def test_idle_split_walks_each_stream_gap_by_gap(rows, kernel_wait):
    expected = {}
    for stream in sorted({r[0] for r in rows}):
        mine = sorted((r for r in rows if r[0] == stream), key=lambda r: r[1])
        split = dict.fromkeys(IDLE_CATEGORIES, 0)
        for before, kernel in pairwise(mine):
            gap = kernel[1] - (before[1] + before[2])
            if kernel[3] is not None and kernel[3] > before[1] + before[2]:
                split["host_wait"] += gap
            elif gap < kernel_wait:
                split["kernel_wait"] += gap
            else:
                split["other"] += gap
        expected[stream] = split
    assert idle_split(_kernels(rows), kernel_wait) == expected


def test_idle_table_lists_every_category_and_nan_ratios_without_idle():
    kernels = _kernels([(7, 0, 10, None), (7, 10, 5, None), (20, 0, 5, None),
                        (20, 100, 5, 50), (20, 110, 5, None)])
    table = idle_table([kernels], per_us=1)
    assert table["idle_category"].tolist() == list(IDLE_CATEGORIES) * 2
    seven, twenty = table[table["stream"] == 7], table[table["stream"] == 20]
    assert seven["idle_time_us"].tolist() == [0, 0, 0] and seven["idle_time_ratio"].isna().all()
    assert twenty["idle_time_us"].tolist() == [95, 5, 0]  # launched at 50, after 5: host wait
    assert twenty["idle_time_ratio"].tolist() == [0.95, 0.05, 0.0]


def _gpu(idle_pct=20.0, waits=(10.0, 0.0, 0.0), overlap=(100.0, 80.0), memory=1.0, ranks=(0,)):
    return {"temporal": [{"rank": r, "idle_pct": idle_pct} for r in ranks],
            "idle": [{"rank": r, "stream": 7, "host_wait_us": waits[0], "kernel_wait_us": waits[1],
                      "other_us": waits[2]} for r in ranks],
            "overlap": [{"rank": r, "communication_us": overlap[0],
                         "comp_comm_overlap_pctg": overlap[1]} for r in ranks],
            "kernel_types": [{"rank": r, "kernel_type": "MEMORY", "percentage": memory}
                             for r in ranks]}


def test_advice_names_the_cause_and_its_tool():
    assert gpu_advice(_gpu()) == []  # busy, overlapped, few copies: nothing to say
    [host] = gpu_advice(_gpu(idle_pct=77.8, waits=(90.0, 10.0, 0.0)))
    assert host["tool"] == "trace"
    assert host["text"].startswith("GPU idle 77.8% of the time: host-bound (90.0% of")
    [small] = gpu_advice(_gpu(idle_pct=60.0, waits=(1.0, 8.0, 1.0)))
    assert small["tool"] == "kernel_stats" and "many small kernels (80.0%" in small["text"]
    [other] = gpu_advice(_gpu(idle_pct=60.0, waits=(1.0, 1.0, 8.0)))
    assert other["tool"] == "trace" and "wait on something else" in other["text"]
    [late] = gpu_advice(_gpu(overlap=(100.0, 14.31)))
    assert late["tool"] == "trace" and late["text"].startswith("Only 14.3% of communication")
    assert gpu_advice(_gpu(overlap=(0.0, float("nan")))) == []  # no communication at all
    [copies] = gpu_advice(_gpu(memory=12.0))
    assert copies["tool"] == "kernel_stats" and "12.0% of GPU kernel time" in copies["text"]
    [ranked] = gpu_advice(_gpu(idle_pct=70.0, ranks=(0, 1)))
    assert "of the time on rank 0:" in ranked["text"]
