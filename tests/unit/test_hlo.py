"""HLO helpers: shapes as XLA prints them, unpadded sizes, the module index, the wire scanners."""

from __future__ import annotations

import os

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_reference import REF

from xprof_widgets.errors import ProfileError
from xprof_widgets.profile.hlo import (
    HloModule,
    IdIndex,
    decode_hlo_proto,
    scan_buffer_assignment,
    shape_to_string,
    split_hlo_proto,
    subshape,
    unpadded_bytes,
)
from xprof_widgets.profile.schema import (
    BufferAssignmentProto,
    HloModuleProto,
    HloProto,
    ShapeProto,
)

pytestmark = pytest.mark.decoding
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F32, S32, BF16, S4, PRED, TUPLE, TOKEN = 11, 4, 16, 21, 1, 13, 17


TPU = REF.hlo_protos(os.path.join(ROOT, "tests", "data", "tpu_v6e_inference.xplane.pb"))
CPU = REF.hlo_protos(os.path.join(ROOT, "tests", "data", "expected",
                                  "memory_jax_cpu_mlp.hlo.xplane.pb"))


def _array(element_type, dims, minor_to_major=None, tiles=(), bits=0, space=0, dynamic=()):
    shape = ShapeProto(element_type=element_type, dimensions=dims)
    shape.is_dynamic_dimension.extend(dynamic)
    if minor_to_major is not None:
        shape.layout.minor_to_major.extend(minor_to_major)
        for tile in tiles:
            shape.layout.tiles.add().dimensions.extend(tile)
        shape.layout.element_size_in_bits = bits
        shape.layout.memory_space = space
    return shape


def _tuple(*elements):
    shape = ShapeProto(element_type=TUPLE)
    for element in elements:
        shape.tuple_shapes.add().CopyFrom(element)
    return shape


# ---- shapes -------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "text"), [
    (_array(F32, [128, 512], [1, 0], [(8, 128)]), "f32[128,512]{1,0:T(8,128)}"),
    (_array(BF16, [1000, 3], [1, 0], [(8, 128), (2, 1)]), "bf16[1000,3]{1,0:T(8,128)(2,1)}"),
    (_array(S4, [100000], [0], [(1024,)], bits=4, space=1), "s4[100000]{0:T(1024)E(4)S(1)}"),
    (_array(F32, [2, 3], [0, 1], [(-(2**63), 128)]), "f32[2,3]{0,1:T(*,128)}"),
    (_array(F32, [3]), "f32[3]"),
    (_array(F32, [], []), "f32[]"),  # a scalar's `{}` layout is not printed
    (_array(8, [], [], space=2), "u32[]{:S(2)}"),
    (_array(F32, [8, 4], [1, 0], dynamic=[True, False]), "f32[<=8,4]{1,0}"),
    (_array(TOKEN, []), "token[]"),
    (_tuple(_array(F32, [2], [0]), _tuple(_array(PRED, [5000], [0]), _array(S32, []))),
     "(f32[2]{0}, (pred[5000]{0}, s32[]))"),
    (_tuple(*[_array(F32, [i]) for i in range(1, 8)]),
     "(f32[1], f32[2], f32[3], f32[4], f32[5], /*index=5*/f32[6], f32[7])"),
])
def test_shape_to_string(shape, text):
    assert shape_to_string(shape) == text


def test_shape_without_layout():
    assert shape_to_string(_array(F32, [128, 512], [1, 0], [(8, 128)]), layout=False) == \
        "f32[128,512]"


@pytest.mark.parametrize(("shape", "size"), [
    (_array(F32, [100, 100], [1, 0], [(8, 128)]), 40000),  # the tiles' padding is not counted
    (_array(BF16, [1000, 3]), 6000),
    (_array(S4, [5]), 3),  # 20 bits -> 3 bytes
    (_array(PRED, [5000]), 5000),
    (_array(F32, []), 4),
    (_array(F32, [0, 7]), 0),
    (_array(TOKEN, []), 0),
    (_tuple(_array(F32, [2]), _array(F32, [3]), _array(F32, [4])), 24),  # 3 pointers
])
def test_unpadded_bytes(shape, size):
    assert unpadded_bytes(shape) == size


def test_subshape():
    shape = _tuple(_array(F32, [2]), _tuple(_array(PRED, [5]), _array(S32, [7])))
    assert shape_to_string(subshape(shape, [1, 1])) == "s32[7]"
    assert subshape(shape, []) is shape
    with pytest.raises(ProfileError, match=r"shape index \{1,2\} does not exist"):
        subshape(shape, [1, 2])
    with pytest.raises(ProfileError, match=r"shape index \{0,0\}"):
        subshape(shape, [0, 0])


# ---- decoding --------------------------------------------------------------------------------
def test_decode_hlo_proto():
    data = TPU["jit_f(12190760917235803885)"]
    assert decode_hlo_proto(data, "x").hlo_module.name == "jit_f"
    with pytest.raises(ProfileError, match=r"^run/host.xplane.pb: the HLO proto is corrupt"):
        decode_hlo_proto(data[:-5], "run/host.xplane.pb")


def test_split_hlo_proto():
    data = TPU["jit_f(12190760917235803885)"]
    proto = HloProto.FromString(data)
    module, ba = split_hlo_proto(data, "x")
    assert HloModuleProto.FromString(module) == proto.hlo_module
    assert BufferAssignmentProto.FromString(ba) == proto.buffer_assignment
    bare = HloProto()
    bare.hlo_module.name = "m"
    assert split_hlo_proto(bare.SerializeToString(), "x")[1] is None
    with pytest.raises(ProfileError, match="where: the HLO proto is corrupt near byte"):
        split_hlo_proto(b"\x0a\x7f\x01", "where")


def test_module_from_message_bytes_and_module_proto_agree():
    data = TPU["jit_f(12190760917235803885)"]
    proto = HloProto.FromString(data)
    modules = [HloModule(data), HloModule(proto), HloModule(proto.hlo_module)]
    assert len({(m.name, m.program_id, len(m.instructions)) for m in modules}) == 1
    assert [BufferAssignmentProto.FromString(m.buffer_assignment_bytes)
            for m in modules[:2]] == [proto.buffer_assignment] * 2
    assert modules[2].buffer_assignment_bytes is None
    assert HloModule(HloProto(hlo_module=proto.hlo_module)).buffer_assignment_bytes is None


def _ba_columns_by_upb(ba):
    lbs = [(lb.id, lb.size, lb.color, lb.defined_at.instruction_id) for lb in ba.logical_buffers]
    index = [list(lb.defined_at.shape_index) for lb in ba.logical_buffers]
    allocs = [(a.index, a.size, a.is_thread_local | a.is_entry_computation_parameter << 1
               | a.maybe_live_out << 2 | a.is_tuple << 3 | a.is_constant << 4, a.color,
               a.parameter_number, len(a.assigned)) for a in ba.buffer_allocations]
    assigned = [(x.logical_buffer_id, x.offset, x.size)
                for a in ba.buffer_allocations for x in a.assigned]
    traces = [(len(t.events), t.buffer_allocation_index, int(t.whole_module_simulation))
              for t in ba.heap_simulator_traces]
    events = [(e.kind, e.buffer_id, e.share_with_canonical_id, e.instruction_name)
              for t in ba.heap_simulator_traces for e in t.events]
    return lbs, index, allocs, assigned, traces, events


def _ba_columns_by_scanner(data):
    ba = scan_buffer_assignment(data, "x")
    index = [ba.shape_index[s:s + n].tolist() for s, n in ba.lbs[:, 4:6]]
    events = [(*e[:3], ba.text(*e[3:5])) for e in ba.events.tolist()]
    return ([tuple(r) for r in ba.lbs[:, :4].tolist()], index,
            [tuple(r[:5]) + (r[6],) for r in ba.allocs.tolist()],
            [tuple(r) for r in ba.assigned.tolist()],
            [(r[1], r[2], r[3]) for r in ba.traces.tolist()], events)


@pytest.mark.parametrize("name", sorted(TPU) + sorted(CPU))
def test_scanner_matches_upb_on_real_protos(name):
    ba = HloProto.FromString({**TPU, **CPU}[name]).buffer_assignment
    assert _ba_columns_by_scanner(ba.SerializeToString()) == _ba_columns_by_upb(ba)


_i64 = st.integers(-(2**63), 2**63 - 1)
_small = st.integers(0, 2**40)


@st.composite
def _buffer_assignments(draw):
    ba = BufferAssignmentProto()
    for _ in range(draw(st.integers(0, 5))):
        lb = ba.logical_buffers.add(id=draw(_i64), size=draw(_small), color=draw(st.integers(0, 6)))
        lb.defined_at.instruction_id = draw(_i64)
        lb.defined_at.shape_index.extend(draw(st.lists(st.integers(0, 300), max_size=4)))
        lb.defined_at.instruction_name = draw(st.text(max_size=5))
    for _ in range(draw(st.integers(0, 3))):
        alloc = ba.buffer_allocations.add(
            index=draw(_small), size=draw(_small), color=draw(st.integers(0, 6)),
            parameter_number=draw(_small), is_thread_local=draw(st.booleans()),
            is_entry_computation_parameter=draw(st.booleans()), maybe_live_out=draw(st.booleans()),
            is_tuple=draw(st.booleans()), is_constant=draw(st.booleans()))
        for _ in range(draw(st.integers(0, 3))):
            alloc.assigned.add(logical_buffer_id=draw(_i64), offset=draw(_small),
                               size=draw(_small))
    for _ in range(draw(st.integers(0, 2))):
        trace = ba.heap_simulator_traces.add(buffer_allocation_index=draw(_small),
                                             whole_module_simulation=draw(st.booleans()))
        for _ in range(draw(st.integers(0, 4))):
            trace.events.add(kind=draw(st.integers(0, 2)), buffer_id=draw(_i64),
                             share_with_canonical_id=draw(_i64),
                             instruction_name=draw(st.text(max_size=8)),
                             computation_name=draw(st.text(max_size=3)))
    return ba


@settings(max_examples=150, deadline=None)
@given(_buffer_assignments())
def test_scanner_matches_upb(ba):
    assert _ba_columns_by_scanner(ba.SerializeToString()) == _ba_columns_by_upb(ba)


@settings(max_examples=100, deadline=None)
@given(_buffer_assignments(), st.data())
def test_scanner_rejects_truncation(ba, data):
    raw = ba.SerializeToString()
    if not raw:
        return
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        parsed = BufferAssignmentProto.FromString(raw[:cut])
    except DecodeError:  # upb refuses it: so must we
        with pytest.raises(ProfileError, match="x: the buffer assignment is corrupt"):
            scan_buffer_assignment(raw[:cut], "x")
    else:  # cut at a field boundary: both read the same shorter message
        assert _ba_columns_by_scanner(raw[:cut]) == _ba_columns_by_upb(parsed)


def test_id_index():
    dense = IdIndex(np.array([3, 0, 7, 3]))
    assert dense(np.array([0, 3, 7, 5, -1, 99])).tolist() == [1, 3, 2, -1, -1, -1]
    sparse = IdIndex(np.array([2**40, -5, 2**40]))
    assert sparse(np.array([-5, 2**40, 7])).tolist() == [1, 2, -1]
    assert IdIndex(np.array([], np.int64))(np.array([1])).tolist() == [-1]


# ---- the module ------------------------------------------------------------------------------
def test_module_lookup():
    data = TPU["jit_f(12190760917235803885)"]
    module = HloModule(data, program_id=12190760917235803885, where="tpu.xplane.pb")
    assert (module.name, module.program_id) == ("jit_f", 12190760917235803885)
    assert HloModule(data).program_id == 12  # the module's own id when none is given
    proto = HloProto.FromString(data)
    upb = [i for c in proto.hlo_module.computations for i in c.instructions]
    assert len(module.instructions) == len(upb)
    target = upb[-1]
    assert module.instruction(target.name) == target
    assert module.instruction(target.id) == target
    assert module.instructions["name"].iat[module.row(target.id)] == target.name
    with pytest.raises(ProfileError, match="tpu.xplane.pb: module jit_f has no instruction 'x'"):
        module.instruction("x")
    with pytest.raises(ProfileError, match="no instruction 123456"):
        module.instruction(123456)
    assert HloModule(proto.hlo_module).name == "jit_f"  # an HloModuleProto works too


def test_instructions_table():
    proto = HloProto.FromString(TPU["jit_f(12190760917235803885)"])
    table = HloModule(proto).instructions
    upb = [(c.name, i) for c in proto.hlo_module.computations for i in c.instructions]
    assert list(table.columns) == ["id", "name", "computation", "opcode", "shape", "op_name",
                                   "source"]
    assert list(table["name"]) == [i.name for _, i in upb]
    assert list(table["computation"]) == [c for c, _ in upb]
    assert list(table["shape"]) == [shape_to_string(i.shape) for _, i in upb]
    row = table.set_index("name").loc["broadcast_add_fusion.2"]
    assert row["op_name"] == "jit(f)/jit(main)/add"
    assert row["source"].endswith("host_offload_stress_test.py:29")


def test_source_from_stack_frames_and_metadata():
    module = HloModule(CPU["jit_train_step(30)"])
    dot = module.instruction("dot.1")
    assert dot.metadata.op_name == "jit(train_step)/transpose(jvp())/transpose"
    assert module.source_of(dot) == "mlp_train.py:14"  # the innermost frame of its stack trace
    synthetic = HloModule(REF.synthetic_modules()["jit_padded_step(7)"])
    assert synthetic.source_of(synthetic.instruction("e")) == "model.py:16"  # OpMetadata only
    assert synthetic.source_of(synthetic.instruction("s")) == ""


def test_unpadded_of_buffers():
    module = HloModule(REF.synthetic_modules()["jit_padded_step(7)"])
    rows = module.rows_of_ids(np.array([5, 5, 5, 1, 99]))
    index = np.array([1, 0, 1, 1, 1, 5])
    spans = np.array([[0, 2], [1, 1], [2, 3], [0, 0], [0, 0]])
    # t{1,0} pred[5000]; t{0} f32[64,64]; t{1,1,5} absent; k s32[10000]; unknown instruction
    assert module.shape_unpadded(rows, index, spans).tolist() == [5000, 16384, -1, 40000, -1]


def test_corrupt_module():
    module = b"\x1a\x05\x0a\x01"  # computations: 5 bytes announced, 2 present
    with pytest.raises(ProfileError, match="m.pb: the HLO module is corrupt near byte 0"):
        HloModule(b"\x0a" + bytes([len(module)]) + module, where="m.pb")
