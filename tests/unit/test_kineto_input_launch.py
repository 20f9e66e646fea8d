"""PyTorch input pipelines in PyTorch's words (issue 30 item 7): an iterator whose `__next__`
launches the GPU work is not input wait (input_events.py's launching rule), and a
DataLoader-bound run gets the DataLoader's arguments as advice, not tf.data's.

Each synthetic Kineto trace has one step, ProfilerStep#1 over [0, 1000) us, with a DataLoader
`__next__` annotation in it; the expected input times are worked out by hand below.
"""

from __future__ import annotations

import gzip
import json

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.input_events import LAUNCH_SHARE
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline

HOST, GPU = 1, 0
NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _trace(tmp_path, next_span, ops, launches) -> str:
    """ops: (name, start, dur); launches: (call name, start, work cat, work name, start, dur)."""
    events = [{"ph": "M", "name": "process_name", "pid": HOST, "args": {"name": "python"}},
              {"ph": "M", "name": "process_name", "pid": GPU, "args": {"name": "GPU 0"}},
              {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": HOST,
               "tid": HOST, "ts": 0, "dur": 1000},
              {"ph": "X", "cat": "user_annotation", "name": NEXT, "pid": HOST, "tid": HOST,
               "ts": next_span[0], "dur": next_span[1]}]
    events += [{"ph": "X", "cat": "cpu_op", "name": n, "pid": HOST, "tid": HOST, "ts": t,
                "dur": d} for n, t, d in ops]
    for corr, (call, t, cat, name, start, dur) in enumerate(launches, 1):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": HOST, "tid": HOST,
                       "ts": t, "dur": 5, "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": cat, "name": name, "pid": GPU, "tid": 7, "ts": start,
                       "dur": dur, "args": {"correlation": corr, "stream": 7, "device": 0}})
    path = tmp_path / "run.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return str(path)


def _input(path: str) -> tuple[float, list[str]]:
    analysis = analyze_input_pipeline(xw.open_profile(path))
    return float(analysis.steps["input_us"].sum()), analysis.input_ops["input_op"].tolist()


def test_an_iterator_that_runs_the_model_is_not_input(tmp_path):
    """A Hugging Face pipeline's __next__ [0, 600): aten::mm [100, 500) launches a kernel that
    runs [200, 480). Launching time 400 of 600 us >= LAUNCH_SHARE: no input at all (without
    the rule: 600 - 280 of compute = 320 us of input)."""
    assert 400 / 600 >= LAUNCH_SHARE
    path = _trace(tmp_path, (0, 600), [("aten::mm", 100, 400)],
                  [("cudaLaunchKernel", 150, "kernel", "gemm", 200, 280)])
    assert _input(path) == (0.0, [])


def test_only_the_launching_part_of_an_iterator_is_cut(tmp_path):
    """__next__ [0, 1000): aten::mm [100, 300) launches a kernel running [150, 250); 200 of
    1000 us launch (under LAUNCH_SHARE), so input is [0, 100) + [300, 1000) = 800 us (without
    the rule: 1000 - 100 of compute = 900 us)."""
    path = _trace(tmp_path, (0, 1000), [("aten::mm", 100, 200), ("aten::stack", 400, 100)],
                  [("cudaLaunchKernel", 150, "kernel", "gemm", 150, 100)])
    assert _input(path) == (800.0, [NEXT])


def test_copies_to_the_gpu_in_the_iterator_stay_input(tmp_path):
    """__next__ [0, 600) whose aten::to [100, 500) copies the batch to the GPU ([200, 300)):
    a copy is input work, so input is 600 - 100 (the copy itself, device time) = 500 us."""
    path = _trace(tmp_path, (0, 600), [("aten::to", 100, 400)],
                  [("cudaMemcpyAsync", 150, "gpu_memcpy", "Memcpy HtoD", 200, 100)])
    assert _input(path) == (500.0, [NEXT])


def test_a_dataloader_bound_run_gets_dataloader_advice(tmp_path):
    """A __next__ of 600 of the step's 1000 us: HIGHLY input-bound, in PyTorch's words."""
    path = _trace(tmp_path, (0, 600), [("aten::stack", 100, 400)],
                  [("cudaLaunchKernel", 700, "kernel", "gemm", 710, 200)])
    analysis = analyze_input_pipeline(xw.open_profile(path))
    text = analysis.recommendation()
    assert analysis.verdict == "HIGHLY"
    for words in ("DataLoader(num_workers=..., pin_memory=True)", "persistent_workers=True",
                  "prefetch_factor"):
        assert words in text
    assert "tf.data" not in text and "grain" not in text


@pytest.mark.parametrize("category", ["Enqueue", "Demanded file read", "Advanced file read",
                                      "Preprocessing", "Other input time"])
def test_every_category_has_advice_in_both_words(category):
    from xprof_widgets.analysis.input_pipeline import _advice

    torch, xprof = _advice("PyTorch")[category], _advice(None)[category]
    assert torch != xprof
    assert "tf.data" not in torch and "grain" not in torch and "num_parallel_calls" not in torch
