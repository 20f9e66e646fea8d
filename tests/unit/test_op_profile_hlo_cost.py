"""FLOPs, bytes, categories and shapes of HLO instructions, counted as XLA's cost model does."""

from __future__ import annotations

import pytest

from xprof_widgets.analysis.hlo_cost import HloCosts, shape_padding
from xprof_widgets.profile.schema import HloProto

F32, BF16, PRED, TUPLE = 11, 16, 1, 13


class Module:
    """A small HloProto built instruction by instruction."""

    def __init__(self):
        self.proto = HloProto()
        self.proto.hlo_module.name, self.proto.hlo_module.id = "jit_test", 3
        self._next = 1

    def computation(self, name: str):
        module = self.proto.hlo_module
        return module.computations.add(name=name, id=len(module.computations) + 1)

    def add(self, comp, name, opcode, dims, operands=(), dtype=F32, **fields):
        ins = comp.instructions.add(name=name, opcode=opcode, id=self._next)
        self._next += 1
        ins.shape.element_type = dtype
        ins.shape.dimensions.extend(dims)
        ins.operand_ids.extend(o.id for o in operands)
        for key, value in fields.items():
            if key == "calls":
                ins.called_computation_ids.extend(c.id for c in value)
            else:
                setattr(ins, key, value)
        return ins

    def costs(self) -> HloCosts:
        return HloCosts(self.proto)


def scalar_add(m: Module):
    comp = m.computation("add")
    x = m.add(comp, "x", "parameter", [])
    y = m.add(comp, "y", "parameter", [])
    m.add(comp, "sum", "add", [], [x, y])
    return comp


def test_elementwise_one_flop_per_output_element():
    m = Module()
    main = m.computation("main")
    a = m.add(main, "a", "parameter", [8, 16])
    b = m.add(main, "b", "parameter", [8, 16])
    mul = m.add(main, "mul", "multiply", [8, 16], [a, b])
    exp = m.add(main, "exp", "exponential", [8, 16], [mul])
    cmp = m.add(main, "cmp", "compare", [8, 16], [a, b], dtype=PRED)
    cvt = m.add(main, "cvt", "convert", [8, 16], [a], dtype=BF16)
    c = m.costs()
    for ins in (mul, exp, cmp):
        assert c.flops(ins) == 128
    assert c.bytes_accessed(mul) == 3 * 128 * 4
    assert c.bytes_accessed(cmp) == 2 * 128 * 4 + 128  # pred is a byte
    assert c.bytes_accessed(cvt) == 128 * 4 + 128 * 2
    assert c.category(mul) == "non-fusion elementwise"


def test_dot_counts_two_flops_per_multiply_add():
    m = Module()
    main = m.computation("main")
    a = m.add(main, "a", "parameter", [4, 64, 32])
    b = m.add(main, "b", "parameter", [4, 32, 16])
    dot = m.add(main, "dot", "dot", [4, 64, 16], [a, b])
    dot.dot_dimension_numbers.lhs_contracting_dimensions.append(2)
    dot.dot_dimension_numbers.rhs_contracting_dimensions.append(1)
    dot.dot_dimension_numbers.lhs_batch_dimensions.append(0)
    dot.dot_dimension_numbers.rhs_batch_dimensions.append(0)
    assert m.costs().flops(dot) == 2 * 4 * 64 * 16 * 32


def test_convolution_counts_kernel_window_and_input_features():
    m = Module()
    main = m.computation("main")
    x = m.add(main, "x", "parameter", [2, 3, 32, 32])  # NCHW
    k = m.add(main, "k", "parameter", [8, 3, 5, 5])  # OIHW
    conv = m.add(main, "conv", "convolution", [2, 8, 28, 28], [x, k])
    d = conv.convolution_dimension_numbers
    d.kernel_output_feature_dimension, d.kernel_input_feature_dimension = 0, 1
    d.kernel_spatial_dimensions.extend([2, 3])
    assert m.costs().flops(conv) == 2 * (2 * 8 * 28 * 28) * (5 * 5) * 3


def test_reductions_scale_with_the_reducer():
    m = Module()
    add = scalar_add(m)
    main = m.computation("main")
    x = m.add(main, "x", "parameter", [64, 10])
    zero = m.add(main, "zero", "constant", [])
    reduce = m.add(main, "reduce", "reduce", [10], [x, zero], calls=[add])
    window = m.add(main, "rw", "reduce-window", [16, 10], [x, zero], calls=[add])
    for size in (4, 1):
        window.window.dimensions.add(size=size, stride=size)
    c = m.costs()
    assert c.flops(reduce) == (640 - 10) * 1
    assert c.flops(window) == 160 * (4 - 1)
    assert c.bytes_accessed(zero) == 0  # constants move nothing


def test_fusion_sums_what_it_calls_and_counts_its_own_traffic():
    m = Module()
    inner = m.computation("fused_inner")
    p = m.add(inner, "p", "parameter", [32, 32])
    m.add(inner, "neg", "negate", [32, 32], [p])
    fused = m.computation("fused_computation")
    p0 = m.add(fused, "p0", "parameter", [32, 32])
    p1 = m.add(fused, "p1", "parameter", [32, 32])
    dot = m.add(fused, "dot.9", "dot", [32, 32], [p0, p1])
    dot.dot_dimension_numbers.lhs_contracting_dimensions.append(1)
    m.add(fused, "nested", "fusion", [32, 32], [dot], fusion_kind="kLoop", calls=[inner])
    main = m.computation("main")
    a = m.add(main, "a", "parameter", [32, 32])
    b = m.add(main, "b", "parameter", [32, 32])
    fusion = m.add(main, "fusion.1", "fusion", [32, 32], [a, b], fusion_kind="kOutput",
                   calls=[fused])
    loop = m.add(main, "fusion.2", "fusion", [32, 32], [fusion], fusion_kind="kLoop",
                 calls=[inner])
    c = m.costs()
    assert c.flops(fusion) == 2 * 32 * 32 * 32 + 32 * 32
    assert c.bytes_accessed(fusion) == 3 * 32 * 32 * 4  # two operands and the output only
    assert c.category(fusion) == "convolution fusion"  # it holds a dot
    assert c.category(loop) == "loop fusion"
    inside = c.fused_ops(fusion)
    assert [(f.name, f.depth) for f in inside] == [("dot.9", 1), ("nested", 1), ("neg", 2)]
    assert c.expression(fusion) == ("%fusion.1 = f32[32,32] fusion(f32[32,32] %a, f32[32,32] %b),"
                                    " kind=kOutput, calls=%fused_computation")


def test_tuple_outputs_count_their_arrays_and_data_movement_no_flops():
    m = Module()
    main = m.computation("main")
    a = m.add(main, "a", "parameter", [100])
    t = m.add(main, "t", "tuple", [], [a, a], dtype=TUPLE)
    for _ in range(2):
        sub = t.shape.tuple_shapes.add(element_type=F32)
        sub.dimensions.append(100)
    copy = m.add(main, "copy", "copy", [100], [a])
    transpose = m.add(main, "tr", "transpose", [100], [a])
    c = m.costs()
    assert c.bytes_accessed(t) == 0 and c.flops(t) == 0
    assert c.flops(copy) == 0 and c.bytes_accessed(copy) == 800
    assert c.category(transpose) == "data formatting"
    assert c.instruction("nope") is None and "copy" in c


@pytest.mark.parametrize("text, unpadded, padded, dims", [
    ("f32[3,5]{1,0:T(8,128)}", 60, 8 * 128 * 4, "f32[8,128]"),
    ("f32[5,1024,1024,256]{3,2,1,0:T(8,128)}", 5 * 2**28 * 4, 5 * 2**28 * 4, ""),
    ("bf16[3,100]{0,1:T(8,128)(2,1)}", 600, 104 * 128 * 2, "bf16[128,104]"),
    ("f32[1000]{0:T(256)}", 4000, 1024 * 4, "f32[1024]"),
    ("f32[7,9]{1,0}", 252, 252, ""),
    ("(f32[2,3]{1,0:T(8,128)}, u32[]{:S(2)})", 28, 4096 + 4, "f32[8,128]"),
])
def test_shape_padding_from_the_first_tile(text, unpadded, padded, dims):
    result = shape_padding(text)
    assert (result.unpadded_bytes, result.padded_bytes, result.padded_dims) == \
        (unpadded, padded, dims)


def test_shape_padding_of_text_without_arrays():
    assert shape_padding("") is None
    token = shape_padding("token[]")
    assert (token.unpadded_bytes, token.padded_bytes, token.padding_bytes) == (0, 0, 0)
