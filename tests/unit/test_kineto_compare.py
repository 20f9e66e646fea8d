"""`xw.compare` on two PyTorch traces: the report's Ops tab is the trace diff, with what was
compared, and the summary says it in words (its numbers are HTA's: tests/differential)."""

from __future__ import annotations

from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.compare import COUNT_CHANGES, TRACE_COLUMNS

HTA = Path(__file__).resolve().parents[1] / "data" / "public" / "hta"


@pytest.fixture(scope="module")
def kineto_pair():
    return xw.compare(HTA / "trace_compare" / "base", HTA / "trace_compare" / "test")


def test_the_report_of_two_pytorch_traces_is_their_trace_diff(kineto_pair):
    report = kineto_pair.view._report()
    ops = report["ops"]
    assert ops["kind"] == "trace"
    assert ops["scope"] == {"ranks_before": [1], "steps_before": [1009], "ranks_after": [1],
                            "steps_after": [1009]}
    diff = kineto_pair.trace_diff()
    assert list(diff.columns) == TRACE_COLUMNS
    assert ops["rows"]["name"] == diff["name"].tolist()
    assert set(diff["count_change"]) <= set(COUNT_CHANGES)
    assert "Ops and kernels (rank 1 step 1009 against rank 1 step 1009)" in report["summary"]


def test_a_later_step_and_one_device(kineto_pair):
    gpu = kineto_pair.trace_diff(device="gpu", iteration_before=1010, iteration_after=1010)
    assert set(gpu["device"]) == {"gpu"} and len(gpu)
    with pytest.raises(xw.ProfileError, match=r"no profiler step \[1020\]; steps: \[1009, 1010\]"):
        kineto_pair.trace_diff(iteration_after=1020)
    with pytest.raises(xw.ProfileError, match=r"no rank \[0\]; ranks: \[1\]"):
        kineto_pair.trace_diff(rank_before=0)
    with pytest.raises(ValueError, match="device must be one of all, cpu, gpu"):
        kineto_pair.trace_diff(device="tpu")
