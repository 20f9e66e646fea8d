"""The MemoryViewer widget's kernel side: module and memory-space choice (from the constructor and
from Python), the figures its view draws, its pandas face, and messages for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import traitlets
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis import analyze_memory
from xprof_widgets.errors import ProfileError
from xprof_widgets.profile.schema import HloProto
from xprof_widgets.widgets import memory_viewer
from xprof_widgets.widgets._base import STATIC_DIR, encode_response
from xprof_widgets.widgets.memory_viewer import MAX_BARS, MemoryViewer, decimate

DATA = Path(__file__).resolve().parents[1] / "data"
TPU = DATA / "tpu_v6e_inference.xplane.pb"
CPU = DATA / "jax_cpu_demo.xplane.pb"
TORCH = DATA / "torch_tiny_mlp.pt.trace.json.gz"
JIT_F = "jit_f(12190760917235803885)"
GIB = 1 << 30
F32, ALLOC, FREE = 11, 0, 1


def synthetic_module(n: int, name: str = "jit_big_step", live: int = 48, seed: int = 0) -> bytes:
    """A serialized HloProto with n logical buffers: f32[rows,128] tiled (8,128), so most
    carry padding; two parameters and one output; the rest temporaries in one allocation, each
    allocated in turn and freed `live` allocations later (sizes vary, so the curve does too)."""
    rng = np.random.default_rng(seed)
    proto = HloProto()
    module = proto.hlo_module
    module.name, module.id, module.entry_computation_name = name, 1, "main"
    comp = module.computations.add(name="main", id=1)
    ba = proto.buffer_assignment
    rows = rng.integers(1, 2048, n)
    sizes = (rows + 7) // 8 * 8 * 128 * 4
    for i in range(n):
        opcode = "parameter" if i < 2 else "fusion"
        ins = comp.instructions.add(id=i + 1, name=f"{opcode}.{i}", opcode=opcode)
        ins.shape.element_type = F32
        ins.shape.dimensions.extend([int(rows[i]), 128])
        ins.shape.layout.minor_to_major.extend([1, 0])
        ins.shape.layout.tiles.add().dimensions.extend([8, 128])
        ins.metadata.op_name = f"jit(step)/layer{i % 7}/dot_general"
        ins.metadata.source_file, ins.metadata.source_line = "model.py", 10 + i % 50
        ba.logical_buffers.add(id=i, size=int(sizes[i])).defined_at.instruction_id = i + 1
    for index, i in enumerate((0, 1)):
        ba.buffer_allocations.add(index=index, size=int(sizes[i]), parameter_number=i,
                                  is_entry_computation_parameter=True).assigned.add(
            logical_buffer_id=i, size=int(sizes[i]))
    ba.buffer_allocations.add(index=2, size=int(sizes[-1]), maybe_live_out=True).assigned.add(
        logical_buffer_id=n - 1, size=int(sizes[-1]))
    temps = range(2, n - 1)
    temp = ba.buffer_allocations.add(index=3, size=int(sizes[2:n - 1].sum()))
    trace = ba.heap_simulator_traces.add(whole_module_simulation=True)
    for i in temps:
        temp.assigned.add(logical_buffer_id=i, size=int(sizes[i]))
        trace.events.add(kind=ALLOC, buffer_id=i, instruction_name=f"fusion.{i}")
        if i - live in temps:
            trace.events.add(kind=FREE, buffer_id=i - live, instruction_name=f"fusion.{i}")
    for i in temps[-live:]:
        trace.events.add(kind=FREE, buffer_id=i, instruction_name="end")
    return proto.SerializeToString()


def profile_with(protos: dict[str, bytes]) -> bytes:
    """An XSpace with one host event and these HLO protos ({"name(id)": bytes}, ids 1, 2, ...
    in order) on `/host:metadata`."""
    return build_xspace([
        {"name": "/host:CPU", "lines": [{"name": "python", "events": [("step", 0, 1000, {})]}]},
        {"name": "/host:metadata",
         "metadata": {name: {"stats": {"Hlo Proto": data}} for name, data in protos.items()}},
    ])


def bare_module(name: str) -> bytes:
    proto = HloProto()
    proto.hlo_module.name, proto.hlo_module.id = name, 1
    return proto.SerializeToString()


@pytest.fixture(autouse=True, scope="module")
def bundle():
    """The widget reads its JavaScript bundle when constructed; a stand-in when none is built."""
    with pytest.MonkeyPatch.context() as patch:
        if not (STATIC_DIR / MemoryViewer._bundle).exists():
            patch.setattr(MemoryViewer, "_esm", "export default {}")
        yield


@pytest.fixture(scope="module")
def tpu_profile():
    return xw.open_profile(TPU)


@pytest.fixture(scope="module")
def big_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("memory") / "big.xplane.pb"
    path.write_bytes(profile_with({"jit_small(1)": synthetic_module(40, "jit_small"),
                                   "jit_big_step(2)": synthetic_module(12_000)}))
    return path


def roundtrip(content: dict, buffers: list) -> tuple[dict, list[bytes]]:
    """What the view receives: the transport's JSON (no NaN allowed) and its buffers."""
    messages = list(encode_response(1, content, buffers))
    first = messages[0][0]
    out = [bytearray(size) for size in first["sizes"]]
    for message, chunk in messages:
        for (index, offset), piece in zip(message["parts"], chunk, strict=True):
            out[index][offset:offset + len(piece)] = bytes(piece)
    if first.get("content_buffer"):
        return json.loads(bytes(out.pop())), [bytes(b) for b in out]
    return first["content"], [bytes(b) for b in out]


def view_of(widget: MemoryViewer) -> tuple[dict, list[np.ndarray]]:
    content, buffers = roundtrip(*widget._call("view", {}))
    if content.get("error"):
        return content, []
    x, padded, unpadded = (np.frombuffer(b, np.float64) for b in buffers[:3])
    return content, [x, padded, unpadded, np.frombuffer(buffers[3], np.int32)]


# ---- choosing the module and memory space -------------------------------------------------------
def test_default_module_spaces_and_lists(tpu_profile):
    mv = MemoryViewer(tpu_profile)
    assert mv.module == JIT_F  # no step-like name: the largest peak
    assert (mv.memory_space, mv.memory_spaces) == ("HBM", ["HBM", "SFlag", "Host"])
    assert mv.program_id == 12190760917235803885
    assert len(mv._modules) == 4 and "jit__psum(9646411105960254074)" in mv._modules
    assert mv.title.endswith("tpu_v6e_inference.xplane.pb") and mv.link == {}
    state = mv.get_state()
    state.pop("_esm", None)
    assert len(json.dumps(state)) < 100_000
    assert "20480.00 MiB" in repr(mv)


def test_cpu_profile_prefers_the_training_step():
    mv = MemoryViewer(CPU)
    assert mv.module == "jit_train_step(8)" and mv.memory_space == "HBM"


def test_setting_module_and_space_from_python(tpu_profile):
    mv = MemoryViewer(tpu_profile)
    changes = []
    mv.observe(lambda c: changes.append((c["name"], c["new"])), names=["memory_space", "_spaces"])
    mv.memory_space = "sflag"  # any case, stored as spelled in XProf
    assert mv.memory_space == "SFlag"
    mv.module = "jit_broadcast_in_dim"  # has HBM and SparseCore: SFlag falls back to HBM
    assert mv.module == "jit_broadcast_in_dim(11287434908481120160)"
    assert (mv.memory_space, mv.memory_spaces) == ("HBM", ["HBM", "SparseCore"])
    assert changes[-2:] == [("_spaces", ["HBM", "SparseCore"]), ("memory_space", "HBM")]
    mv.module = 9646411105960254074  # a program id
    assert mv.module == "jit__psum(9646411105960254074)"
    mv.module = "12190760917235803885"  # its digits
    assert mv.module == JIT_F
    mv.module = "jit__psum(9646411105960254074)"  # the label itself
    assert mv.program_id == 9646411105960254074
    with pytest.raises(traitlets.TraitError, match="has no buffers in VMEM; it has HBM"):
        mv.memory_space = "VMEM"
    with pytest.raises(traitlets.TraitError, match=r"no HLO module 'jit_g'.*jit_f\("):
        mv.module = "jit_g"
    assert mv.module == "jit__psum(9646411105960254074)"


def test_a_repeated_name_picks_the_module_default_module_prefers():
    mv = MemoryViewer(CPU)
    mv.module = "jit_stage"  # four modules share it: the one with the largest peak (8 MiB)
    assert mv.module == "jit_stage(4)"


def test_constructor_choices(tpu_profile):
    mv = MemoryViewer(tpu_profile, module="jit_broadcast_in_dim", memory_space="SparseCore")
    assert (mv.program_id, mv.memory_space) == (11287434908481120160, "SparseCore")
    # the default space, absent from a module, falls back to the module's first space
    mv = MemoryViewer(tpu_profile, module="jit_convert_element_type")
    assert mv.memory_space == "HBM"
    with pytest.raises(ProfileError, match="has no buffers in VMEM; it has HBM, SFlag, Host"):
        MemoryViewer(tpu_profile, memory_space="VMEM")
    with pytest.raises(ProfileError, match="unknown memory space 'DRAM'"):
        MemoryViewer(tpu_profile, memory_space="DRAM")
    with pytest.raises(ProfileError, match="no HLO module 'jit_nope'"):
        MemoryViewer(tpu_profile, module="jit_nope")


# ---- what the view draws ------------------------------------------------------------------------
def test_view_of_the_tpu_module(tpu_profile):
    mv = MemoryViewer(tpu_profile)
    content, (x, padded, unpadded, codes) = view_of(mv)
    assert (content["module"], content["memory_space"]) == (JIT_F, "HBM")
    s = content["summary"]
    assert s["program_id"] == "12190760917235803885"  # as text: beyond JavaScript's integers
    assert (s["peak_bytes"], s["peak_instruction"], s["peak_program_order"]) == (
        20 * GIB + 32, "broadcast_add_fusion.2", 3)
    assert (content["unit"], content["scale"]) == ("GiB", GIB)
    timeline = mv.timeline()
    assert content["curve"]["steps"] == content["curve"]["points"] == len(timeline) == 12
    np.testing.assert_array_equal(x, np.arange(12))
    np.testing.assert_allclose(padded * GIB, timeline["allocated_bytes"])
    np.testing.assert_allclose(unpadded * GIB, timeline["allocated_unpadded_bytes"])
    names = np.array(content["curve"]["names"])[codes]
    assert names.tolist() == timeline["instruction"].astype(str).tolist()

    bars = content["bars"]
    frame = mv.to_dataframe()
    assert bars["total"] == len(frame) == 5 and bars["padded"]  # the small lump: 8 B padding
    rows = bars["rows"]
    assert rows["name"] == frame["name"].tolist()  # every row shown, in program order
    assert bars["orders"]["program"] == [0, 1, 2, 3, 4]
    assert [rows["size_bytes"][r] for r in bars["orders"]["size"]] == sorted(
        frame["size_bytes"], reverse=True)
    assert bars["orders"]["padding"][0] == 4
    first = rows["name"].index("copy-start{0}")
    assert rows["instruction"][first] == "copy-start"  # the op the trace link names
    assert (rows["start"][first], rows["end"][first]) == (0, 4)
    assert rows["shape"][first] == "f32[5,1024,1024,256]{3,2,1,0:T(8,128)}"
    assert rows["size"][first] == pytest.approx(5.0)
    assert rows["instruction"][4] is None and rows["start"][4] is None  # the small lump
    assert (bars["padding_unit"], rows["padding"][4], rows["padding"][first]) == ("B", 8, 0)


def test_view_follows_the_traits(tpu_profile):
    mv = MemoryViewer(tpu_profile)
    mv.memory_space = "Host"
    content, curve = view_of(mv)
    assert content["memory_space"] == "Host"
    assert content["summary"]["parameters_bytes"] == 15 * GIB
    assert content["curve"]["steps"] == 0 and len(curve[0]) == 0  # no heap steps in Host
    mv.module = "jit__psum"
    content, _ = view_of(mv)
    assert (content["module"], content["memory_space"]) == ("jit__psum(9646411105960254074)",
                                                            "HBM")
    assert content["summary"]["peak_bytes"] == 10 * GIB


def test_analyses_are_cached_per_choice(tpu_profile):
    mv = MemoryViewer(tpu_profile)
    first = mv.analysis
    mv.memory_space = "SFlag"
    assert mv.analysis is not first
    mv.memory_space = "HBM"
    assert mv.analysis is first


def test_chart_templates_name_what_the_view_fills(tpu_profile):
    items = MemoryViewer(tpu_profile)._call("charts", {})[0]
    assert set(items) == {"curve", "program", "size", "padding"}
    text = json.dumps(items["curve"])
    for name in ("curve", "lifetime", "peak", "peak_label", "y_axis", "curve_hover"):
        assert f'"name":"{name}"' in text.replace(" ", ""), name
    for key in ("program", "size", "padding"):
        text = json.dumps(items[key]).replace(" ", "")
        assert '"name":"bars"' in text and '"name":"bars_y_axis"' in text
    assert len(json.dumps(items)) < 100_000


# ---- large modules: a bounded view, the peak exact ----------------------------------------------
def test_large_module_decimated_and_bounded(big_path, monkeypatch):
    monkeypatch.setattr(memory_viewer, "MAX_BUCKETS", 500)
    mv = MemoryViewer(big_path)
    assert mv.module == "jit_big_step(2)"
    content, (x, padded, unpadded, codes) = view_of(mv)
    timeline = mv.timeline()
    steps = content["curve"]["steps"]
    assert steps == len(timeline) > 20_000
    assert len(x) == content["curve"]["points"] <= 4 * 500 + 3
    kept = x.astype(int)
    scale = content["scale"]
    np.testing.assert_allclose(padded * scale, timeline["allocated_bytes"].to_numpy()[kept])
    np.testing.assert_allclose(unpadded * scale,
                               timeline["allocated_unpadded_bytes"].to_numpy()[kept])
    s = content["summary"]
    assert s["peak_program_order"] in kept  # the peak is drawn exactly where it is
    assert padded.max() * scale == pytest.approx(s["peak_bytes"])
    assert np.array(content["curve"]["names"])[codes].tolist() == \
        timeline["instruction"].astype(str).to_numpy()[kept].tolist()
    bars = content["bars"]
    assert bars["total"] == len(mv.to_dataframe()) > 48
    assert all(len(order) <= MAX_BARS for order in bars["orders"].values())
    # the switch to a small module and back
    mv.module = "jit_small"
    assert view_of(mv)[0]["curve"]["points"] == view_of(mv)[0]["curve"]["steps"]


def test_large_module_bar_bound(big_path, monkeypatch):
    monkeypatch.setattr(memory_viewer, "MAX_BARS", 10)
    mv = MemoryViewer(big_path, module="jit_big_step")
    content, _ = view_of(mv)
    bars, frame = content["bars"], mv.to_dataframe()
    rows = bars["rows"]
    sizes = [rows["size_bytes"][r] for r in bars["orders"]["size"]]
    assert sizes == frame["size_bytes"].nlargest(10).tolist()
    program = [rows["name"][r] for r in bars["orders"]["program"]]
    assert program == [n for n in frame["name"] if n in set(program)]  # still program order
    padding = [rows["padding_bytes"][r] for r in bars["orders"]["padding"]]
    assert padding == frame["padding_bytes"].nlargest(10).tolist()
    assert len(rows["name"]) <= 30


def test_decimate_keeps_every_bucket_extreme():
    rng = np.random.default_rng(1)
    padded = rng.integers(0, 1000, 10_007).cumsum()
    unpadded = padded - rng.integers(0, 50, len(padded))
    kept = decimate(padded, unpadded, keep=4321, buckets=100)
    assert kept[0] == 0 and kept[-1] == len(padded) - 1 and 4321 in kept
    assert np.all(np.diff(kept) > 0) and len(kept) <= 4 * 101 + 3
    width = -(-len(padded) // 100)
    for start in range(0, len(padded), width):
        run = slice(start, start + width)
        inside = kept[(kept >= start) & (kept < start + width)]
        for curve in (padded, unpadded):
            assert curve[run].min() in curve[inside] and curve[run].max() in curve[inside]
    np.testing.assert_array_equal(decimate(padded[:150], unpadded[:150], None, 100),
                                  np.arange(150))


def test_memory_curve_matches_the_timeline():
    """The view reads the curve without naming every step; it must equal timeline()'s."""
    analysis = analyze_memory(synthetic_module(300))
    padded, unpadded = analysis.curve()
    timeline = analysis.timeline()
    np.testing.assert_array_equal(padded, timeline["allocated_bytes"])
    np.testing.assert_array_equal(unpadded, timeline["allocated_unpadded_bytes"])
    assert analysis.instructions_at(np.array([0, 5])) == \
        timeline["instruction"].astype(str)[[0, 5]].tolist()


def test_unit_of_peaks():
    assert memory_viewer.unit_of(1) == ("B", 1)
    assert memory_viewer.unit_of(1023) == ("B", 1)
    assert memory_viewer.unit_of(1 << 20) == ("MiB", 1 << 20)
    assert memory_viewer.unit_of(20 * GIB) == ("GiB", GIB)


# ---- pandas face ------------------------------------------------------------------------------
def test_pandas_face(tpu_profile):
    mv = MemoryViewer(tpu_profile)
    expected = analyze_memory(tpu_profile.hlo_proto_bytes(mv.program_id), "HBM")
    pd.testing.assert_frame_equal(mv.to_dataframe(), expected.buffers())
    pd.testing.assert_frame_equal(mv.to_dataframe("size"), expected.buffers("size"))
    pd.testing.assert_frame_equal(mv.timeline(), expected.timeline())
    frame = mv.to_dataframe()
    assert {"size_bytes", "size_mib", "start", "end", "allocation_type", "op_name"} <= set(frame)
    frame["size_bytes"] = 0  # a copy: the widget's table stays
    assert mv.to_dataframe()["size_bytes"].gt(0).all()
    assert mv.summary["peak_bytes"] == 20 * GIB + 32
    with pytest.raises(ValueError, match="order"):
        mv.to_dataframe("name")


# ---- bad input: a message in the widget, never an exception from the constructor -----------------
def test_profile_without_hlo_protos():
    mv = MemoryViewer(TORCH)
    assert "carries no HLO protos" in mv._error and "jax.profiler.trace" in mv._error
    assert mv._modules == [] and mv.program_id is None and mv.memory_spaces == []
    content, _ = roundtrip(*mv._call("view", {}))
    assert content["error"] == mv._error
    with pytest.raises(ProfileError, match="no HLO protos"):
        mv.to_dataframe()
    assert "no HLO protos" in repr(mv)


def test_module_without_buffer_assignment(tmp_path):
    path = tmp_path / "bare.xplane.pb"
    path.write_bytes(profile_with({"jit_step(1)": bare_module("jit_step")}))
    mv = MemoryViewer(path)
    assert mv.module == "jit_step(1)" and mv.memory_spaces == []
    content, _ = roundtrip(*mv._call("view", {}))
    assert "jit_step(1) has no buffer assignment" in content["error"]
    assert "jax.profiler.trace" in content["error"]
    with pytest.raises(ProfileError, match="no buffer assignment"):
        mv.timeline()
    assert "no buffer assignment" in repr(mv)


def test_module_without_buffer_assignment_beside_one_with_it(tmp_path):
    path = tmp_path / "mixed.xplane.pb"
    path.write_bytes(profile_with({"jit_train_step(1)": bare_module("jit_train_step"),
                                   "jit_eval(2)": synthetic_module(30, "jit_eval")}))
    mv = MemoryViewer(path)
    assert mv.module == "jit_eval(2)"  # passed over by default: it has nothing to show
    mv.module = "jit_train_step"
    assert mv.memory_spaces == [] and mv.memory_space == "HBM"
    assert "no buffer assignment" in roundtrip(*mv._call("view", {}))[0]["error"]
    mv.module = "jit_eval"
    assert roundtrip(*mv._call("view", {}))[0]["summary"]["module"] == "jit_eval"


# ---- in the suite -----------------------------------------------------------------------------
def test_link_routes_to_the_trace_viewer_in_the_suite(make_logdir):
    suite = xw.Profiler(make_logdir({"2026_01_01_00_00_00": {"tpu.xplane.pb": TPU}}),
                        tool="memory")
    mv = suite.tool("memory")
    assert isinstance(mv, MemoryViewer)
    mv.link = {"tool": "trace", "op": "broadcast_add_fusion.2"}
    assert suite.tabs.selected_index == 1  # the Trace Viewer tab
    assert len(suite.tool("trace").selected_events) > 0
