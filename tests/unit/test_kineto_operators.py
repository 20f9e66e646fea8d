"""The Operator view (PyTorch's TensorBoard plugin) of Framework Op Stats on Kineto traces.

By op and input shape against PyTorch itself: tests/data/torch_self_time holds a torch 2.13.0
CPU profile recorded with `record_shapes=True` and `key_averages(group_by_input_shape=True)` of
the same run (tests/data/make/torch_self_time.py). On a small GPU trace written here: device
self and total time through nested ops, Tensor Core eligibility and shares (unknown stays
unknown), call stacks from the `Call stack` arg and from Python functions, and GPU work no op
launched.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import pytest
from test_kineto_self_time import same_as_key_averages

import xprof_widgets as xw
from xprof_widgets.analysis.kineto.operators import COLUMNS, is_tensor_core_eligible, operators

DATA = Path(__file__).resolve().parents[1] / "data" / "torch_self_time"
GEMM = "sm90_xmma_gemm_f16f16_f16f32"  # Tensor Cores: yes
ADD = "void at::native::vectorized_elementwise_kernel<4, add>"  # no
TRITON = "triton_poi_fused_add_0"  # unknown


@pytest.fixture(scope="module")
def by_shape():
    table = operators(xw.open_profile(DATA / "trace.json.gz"), "input_shape")
    return {(r.operation, r.input_shape): r for r in table.itertuples(index=False)}


def test_by_input_shape_equals_key_averages(by_shape):
    """Calls, host total and host self time per (op, input shape), as
    key_averages(group_by_input_shape=True) states them; only the annotations have no row."""
    theirs = {(r["key"], r["input_shapes"]): r for r in json.loads(
        (DATA / "key_averages_by_input_shape.json").read_text())}
    assert len(by_shape) > 80
    assert len({name for name, _ in by_shape}) < len(by_shape)  # some op ran with two shapes
    for key, row in by_shape.items():
        expected = theirs[key]
        same_as_key_averages(row.calls, row.host_total_time_us, row.host_self_time_us,
                             expected, key)
    assert {name for name, _ in set(theirs) - set(by_shape)} == {
        "my_block", "optimizer_block", "scaled_tanh_grad", "Optimizer.step#SGD.step",
        "Optimizer.zero_grad#SGD.zero_grad"}


def test_by_op_is_the_host_rows_of_xprofs_table():
    """Grouped by op, the host columns are Framework Op Stats' host rows (one rule); a CPU run
    has no device time and no Tensor Core share (NaN, where the plugin writes 0)."""
    stats = xw.FrameworkOpStats(xw.open_profile(DATA / "trace.json.gz"))
    host = stats.to_dataframe().query("host_or_device == 'Host' and type != 'IDLE'")
    ops = stats.to_dataframe(group_by="op").set_index("operation")
    assert set(ops.index) == set(host["operation"])
    for row in host.itertuples(index=False):
        assert ops.loc[row.operation, "calls"] == row.occurrences
        assert ops.loc[row.operation, "host_self_time_us"] == row.total_self_time_us
        assert ops.loc[row.operation, "host_total_time_us"] == row.total_time_us
    assert (ops["device_total_time_us"] == 0).all()
    assert ops["tensor_core_self_pct"].isna().all()
    assert ops.loc["aten::mm", "tensor_core_eligible"]  # by name alone, as the plugin says


def _op(name, ts, dur, ext, **args):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"External id": ext, **args}}


def _launch(ts, corr, kernel, start, dur):
    return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": ts, "dur": 1, "args": {"correlation": corr, "External id": corr}},
            {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": start,
             "dur": dur, "args": {"stream": 7, "device": 0, "correlation": corr}}]


def _python(name, ts, dur, pid_, parent):
    return {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {"Python id": pid_, "Python parent id": parent}}


@pytest.fixture()
def gpu(tmp_path):
    """aten::linear (a shape) -> aten::addmm -> {GEMM 40 us, add 10 us}; aten::linear again
    (another shape) -> aten::addmm -> Triton 20 us; a stray kernel no op launched; the first
    linear under two Python frames, the second with a `Call stack` arg."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
        _python("train.py(10): step", 0, 50, 1, 0),
        _python("model.py(5): forward", 1, 40, 2, 1),
        _op("aten::linear", 2, 30, 100, **{"Input Dims": [[8, 16], [32, 16], [32]]}),
        _op("aten::addmm", 3, 20, 101, **{"Input Dims": [[32], [8, 16], [16, 32]]}),
        *_launch(4, 1, GEMM, 100, 40), *_launch(6, 2, ADD, 150, 10),
        _op("aten::linear", 60, 30, 200, **{"Input Dims": [[4, 16], [32, 16], [32]],
                                            "Call stack": "a.py(1): f;b.py(2): g"}),
        _op("aten::addmm", 61, 20, 201, **{"Input Dims": [[32], [4, 16], [16, 32]]}),
        *_launch(62, 3, TRITON, 200, 20),
        {"ph": "X", "cat": "kernel", "name": ADD, "pid": 0, "tid": 7, "ts": 300, "dur": 5,
         "args": {"stream": 7, "device": 0, "correlation": 99}},
    ]
    path = tmp_path / "gpu.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return xw.open_profile(path)


def test_device_self_and_total_through_nested_ops(gpu):
    ops = operators(gpu, "op").set_index("operation")
    assert ops.loc["aten::addmm", "device_self_time_us"] == 70
    assert ops.loc["aten::linear", "device_self_time_us"] == 0
    assert ops.loc["aten::linear", "device_total_time_us"] == 70  # its addmm's work
    assert ops.loc["aten::linear", "calls"] == 2
    assert ops.loc["aten::linear", "host_self_time_us"] == 20  # 2 x (30 - 20)
    assert ops.loc["aten::addmm", "host_self_time_us"] == 37  # 2 x 20 - 3 launches of 1 us
    assert list(ops.index[:2]) == ["aten::addmm", ADD]  # by device self time


def test_tensor_core_shares_keep_unknown(gpu):
    """One addmm ran a GEMM (TC) and an add (no): 80%; the other a Triton kernel (unknown):
    its share, and the op's over both, is unknown (NaN), never a guess."""
    shapes = operators(gpu, "input_shape").set_index(["operation", "input_shape"])
    first = shapes.loc[("aten::addmm", "[[32], [8, 16], [16, 32]]")]
    assert first["tensor_core_self_pct"] == pytest.approx(80)
    assert first["tensor_core_eligible"]
    linear = shapes.loc[("aten::linear", "[[8, 16], [32, 16], [32]]")]
    assert linear["tensor_core_self_pct"] != linear["tensor_core_self_pct"]  # no device self
    assert linear["tensor_core_total_pct"] == pytest.approx(80)
    second = shapes.loc[("aten::addmm", "[[32], [4, 16], [16, 32]]")]
    assert math.isnan(second["tensor_core_self_pct"])
    assert math.isnan(operators(gpu, "op").set_index("operation").loc[
        "aten::addmm", "tensor_core_self_pct"])


def test_eligibility_by_name_kernel_or_nested_op():
    assert is_tensor_core_eligible("aten::mm")  # the plugin's list
    assert is_tensor_core_eligible("aten::_scaled_dot_product_flash_attention")  # PyTorch 2
    assert not is_tensor_core_eligible("aten::add")


def test_call_stacks_from_the_arg_or_python_functions(gpu):
    stacks = operators(gpu, "call_stack").set_index(["operation", "call_stack"])
    assert ("aten::linear", "model.py(5): forward;train.py(10): step") in stacks.index
    assert ("aten::linear", "a.py(1): f;b.py(2): g") in stacks.index
    assert stacks["calls"].sum() == 4


def test_work_no_op_launched_stands_alone(gpu):
    ops = operators(gpu, "op").set_index("operation")
    assert ops.loc[ADD, "calls"] == 0
    assert ops.loc[ADD, "device_self_time_us"] == 5
    assert ops.loc[ADD, "type"] == "Unknown"
    assert ops.loc[ADD, "host_total_time_us"] == 0


def test_group_by_on_the_widget(gpu, tpu_path):
    stats = xw.FrameworkOpStats(gpu)
    assert stats._summary["groupings"] == ["host_or_device", "op", "input_shape", "call_stack"]
    stats.group_by = "input_shape"
    assert "input_shape" in stats.to_dataframe().columns
    assert "host_or_device" in stats.to_dataframe(group_by="host_or_device").columns
    content = stats._table(include_idle=True, group_by="op")
    assert content["group_by"] == "op" and len(content["charts"]) == 4
    xplane = xw.FrameworkOpStats(tpu_path)
    assert xplane._summary["groupings"] == ["host_or_device"]
    with pytest.raises(ValueError, match="PyTorch profiler trace"):
        xplane.to_dataframe(group_by="op")
    with pytest.raises(ValueError, match="groups by one of"):
        operators(gpu, "stack")


def test_the_view_has_every_column():
    """The view's operator table (js/src/framework_op_stats/view.js) shows the table's columns,
    in its order."""
    view = (Path(__file__).resolve().parents[2] / "js" / "src" / "framework_op_stats" /
            "view.js").read_text()
    block = view[view.index("OPERATOR_COLUMNS = ["):]
    keys = re.findall(r'\{ key: "(\w+)"', block[:block.index("];")])
    assert keys == COLUMNS
