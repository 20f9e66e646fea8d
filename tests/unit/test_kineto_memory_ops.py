"""Memory per op, as PyTorch's TensorBoard plugin's Memory View counts it, on a trace whose
answer is worked out by hand (the live comparison with the plugin is
tests/differential/test_torch_plugin_memory.py)."""

from __future__ import annotations

import json

import xprof_widgets as xw
from xprof_widgets.analysis.kineto.memory import OP_COLUMNS
from xprof_widgets.analysis.memory_profile import analyze_memory_profile


def _op(name: str, ts: float, dur: float, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def _memory(ts: float, addr: int, size: int, device: int = 1) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
            "tid": 1, "ts": ts, "args": {"Addr": addr, "Bytes": size, "Device Type": device,
                                         "Device Id": 0 if device else -1}}


def test_self_and_inclusive_per_op(tmp_path):
    """aten::linear [10, 50) holds aten::mm [20, 30) and Optimizer.zero_grad#SGD [35, 45);
    aten::sum [70, 90) holds an aten::sum [72, 88)."""
    events = [
        _op("ProfilerStep#1", 0, 100, "user_annotation"),
        _op("aten::linear", 10, 40), _op("aten::mm", 20, 10),
        _op("Optimizer.zero_grad#SGD.zero_grad", 35, 10),
        _op("aten::sum", 70, 20), _op("aten::sum", 72, 16),
        _memory(15, 0xA, 100),   # aten::linear's own
        _memory(25, 0xB, 50),    # aten::mm's
        _memory(30, 0xB, -50),   # at the tick aten::mm ends: aten::linear's
        _memory(40, 0xC, 8),     # in Optimizer.zero_grad: no op's, not even aten::linear's
        _memory(60, 0xA, -100),  # in the step only: no op's
        _memory(80, 0xD, 4),     # the inner aten::sum's: both calls' inclusive
        _memory(81, 0xE, 16, device=0),  # the CPU's: its own table
    ]
    path = tmp_path / "ops.json"
    path.write_text(json.dumps({"traceEvents": events}))
    analysis = analyze_memory_profile(xw.open_profile(path))
    table = analysis.allocator("cuda:0").ops
    assert table.columns.tolist() == OP_COLUMNS
    rows = {r.op_name: list(r)[1:] for r in table.itertuples(index=False)}
    # calls; inclusive: count, bytes, free count, free bytes, increase; then self alike
    assert rows == {
        "aten::linear": [1, 2, 150, 1, 50, 100, 1, 100, 1, 50, 50],
        "aten::mm": [1, 1, 50, 0, 0, 50, 1, 50, 0, 0, 50],
        "aten::sum": [2, 2, 8, 0, 0, 8, 1, 4, 0, 0, 4],
    }
    assert table["op_name"].tolist() == ["aten::linear", "aten::mm", "aten::sum"]  # self increase
    cpu = analysis.allocator("cpu").ops
    assert cpu["op_name"].tolist() == ["aten::sum"]
    assert cpu[["calls", "allocation_bytes", "self_allocation_bytes"]].values.tolist() == [
        [2, 32, 16]]


def test_ops_with_a_text_tid_own_the_memory_events_with_a_number(tmp_path):
    """PyTorch 1.8's traces (the TensorBoard plugin's ResNet50 samples) write an op's tid as
    text ("7") and a [memory] event's as a number (7): one thread, whose ops the events take."""
    meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": "7",
            "args": {"name": "thread 7 (python)"}}
    events = [meta, {**_op("aten::conv2d", 10, 20, "Operator"), "tid": "7"},
              {**_op("aten::empty", 12, 4, "Operator"), "tid": "7"},
              {**_memory(13, 0, 64), "tid": 7, "args": {"Bytes": 64, "Device Type": 1,
                                                        "Device Id": 0}},
              {**_memory(25, 0, -64), "tid": 7, "args": {"Bytes": -64, "Device Type": 1,
                                                         "Device Id": 0}}]
    path = tmp_path / "torch_1_8.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = xw.open_profile(path)
    assert profile.built_tracks["section_kind"].eq("host").sum() == 1  # one thread
    memory = analyze_memory_profile(profile).allocator("cuda:0")
    assert memory.snapshots["cpu_op"].tolist() == ["aten::empty", "aten::conv2d"]
    rows = {r.op_name: list(r)[1:] for r in memory.ops.itertuples(index=False)}
    assert rows == {"aten::conv2d": [1, 1, 64, 1, 64, 0, 0, 0, 1, 64, -64],
                    "aten::empty": [1, 1, 64, 0, 0, 64, 1, 64, 0, 0, 64]}
