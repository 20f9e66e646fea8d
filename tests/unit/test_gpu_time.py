"""HTA's breakdowns on made-up GPU work against a count of every time unit.

On integer intervals, each unit [t, t + 1) is covered by some set of kernel types: the kernel
breakdown is how many units each set covers, the temporal breakdown counts the units between
the first start and the last end that nothing, or COMPUTATION, covers.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xprof_widgets.analysis.kineto.gpu_time import (
    TYPES,
    GpuWork,
    kernel_type,
    temporal_breakdown,
    type_breakdown,
)

KINDS = (*TYPES, "OTHER")
intervals = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15), st.sampled_from(KINDS)),
                     min_size=1, max_size=25)


def _work(rows: list[tuple[int, int, str]]) -> GpuWork:
    return GpuWork(0, np.array([s for s, _, _ in rows], np.int64),
                   np.array([s + d for s, d, _ in rows], np.int64),
                   np.array([k for _, _, k in rows], dtype=object))


def _covering(rows: list[tuple[int, int, str]], t: int) -> set[str]:
    return {k for s, d, k in rows if s <= t < s + d}


@settings(max_examples=300, deadline=None)
@given(intervals)
def test_kernel_breakdown_counts_each_unit_once(rows):
    units = Counter()
    for t in range(80):
        kinds = _covering(rows, t) - {"OTHER"}
        if kinds:
            units[" overlapping ".join(k for k in TYPES if k in kinds)] += 1
    assert type_breakdown(_work(rows)) == dict(units)


@settings(max_examples=300, deadline=None)
@given(intervals)
def test_temporal_breakdown_counts_idle_and_compute_units(rows):
    first = min(s for s, _, _ in rows)
    last = max(s + d for s, d, _ in rows)
    span = range(first, last)
    idle = sum(1 for t in span if not _covering(rows, t))
    compute = sum(1 for t in span if "COMPUTATION" in _covering(rows, t))
    assert temporal_breakdown(_work(rows)) == {
        "idle": idle, "compute": compute, "non_compute": len(span) - idle - compute,
        "kernel": len(span)}


def test_kernel_types_by_hta_names():
    assert kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)") == "COMMUNICATION"
    assert kernel_type("ncclDevKernel_AllGather_RING_LL") == "COMMUNICATION"
    assert kernel_type("Memcpy HtoD (Pageable -> Device)") == "MEMORY"
    assert kernel_type("Memset (Device)") == "MEMORY"
    assert kernel_type("dma_request") == "MEMORY"
    assert kernel_type("Stream Sync") == "OTHER"
    assert kernel_type("void at::native::vectorized_elementwise_kernel<4>") == "COMPUTATION"
