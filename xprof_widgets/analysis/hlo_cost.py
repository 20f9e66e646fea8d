"""FLOPs and bytes of HLO instructions, from the module's HloProto, for profiles that lack them.

TPU profiles carry each op's FLOPs and bytes as metadata stats (the compiler's numbers). CPU
profiles carry none and GPU profiles often none, so the op profile counts them here the way
XLA's HloCostAnalysis does:

- elementwise ops (add, multiply, compare, select, convert, exp, ...): one FLOP per output
  element; transcendental ops count one FLOP too (XLA books them apart as "transcendentals");
- dot: 2 x output elements x the product of the contracting dimensions;
- convolution: 2 x output elements x kernel spatial size x kernel input features (the kernel's
  input feature dimension already divides by the feature group count);
- reduce: (input elements - output elements) x the FLOPs of one reducer call; reduce-window:
  output elements x (window size - 1) x reducer; scatter: update elements x reducer; map: output
  elements x the mapped computation; all-reduce / reduce-scatter: elements x reducer;
- a fusion: the sum over the instructions it calls (nested fusions included);
- bytes accessed: operands plus output, unpadded (elements x element bits); a fusion counts its
  own operands and output, not the traffic between the ops inside it; bitcast, tuple,
  get-tuple-element, parameter and constant move nothing.

Everything else (data movement, control flow, custom calls) counts zero FLOPs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..profile.hlo import HloModule, shape_to_string
from ..profile.schema import PRIMITIVE_TYPES

TUPLE = 13

ELEMENTWISE = frozenset((
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "clz", "compare", "complex", "convert",
    "cos", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag", "is-finite",
    "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or",
    "popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz",
    "round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sin", "sqrt", "stochastic-convert", "subtract", "tan", "tanh",
    "xor",
))
_NO_TRAFFIC = frozenset({"bitcast", "tuple", "get-tuple-element", "parameter", "constant",
                         "after-all", "add-dependency", "partition-id", "replica-id"})
_DATA_FORMATTING = frozenset({"transpose", "copy", "reshape", "dynamic-reshape"})
_MATMUL = frozenset({"dot", "convolution"})
_FUSION_KINDS = {"kLoop": "loop", "kInput": "input", "kOutput": "output", "kCustom": "custom"}
_BITS_BY_NAME = {name: bits for name, bits in PRIMITIVE_TYPES.values()}
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\](?:\{([^}]*)\})?")


@dataclass(frozen=True)
class FusedOp:
    """One instruction inside a fusion, as the op table's fusion rows show it."""

    name: str
    opcode: str
    category: str
    flops: int
    shape: str
    expression: str
    framework_op: str
    depth: int


class HloCosts:
    """Cost model, category and text of one module's instructions, computed on first ask.

    Built from an `xla.HloProto` message (what `Profile.hlo_proto` returns). Only the
    computations an asked-for instruction calls are walked, so a large module costs little when
    a profile names few of its ops.
    """

    def __init__(self, proto: Any, where: str = "HLO module"):
        self._proto = proto
        self._module = proto.hlo_module if hasattr(proto, "hlo_module") else proto
        self.name: str = self._module.name
        self.program_id: int = int(self._module.id)
        self._where = where
        self._flops_of: dict[int, int] = {}
        self._computation_flops: dict[int, int] = {}

    # ---- lookup -------------------------------------------------------------------------------
    @cached_property
    def _computations(self) -> dict[int, Any]:
        return {c.id: c for c in self._module.computations}

    @cached_property
    def _instructions(self) -> tuple[dict[int, Any], dict[str, Any]]:
        by_id: dict[int, Any] = {}
        by_name: dict[str, Any] = {}
        for computation in self._module.computations:
            for instruction in computation.instructions:
                by_id[instruction.id] = instruction
                by_name[instruction.name] = instruction
        return by_id, by_name

    @cached_property
    def _module_view(self) -> HloModule:
        return HloModule(self._proto, where=self._where)

    def instruction(self, name: str) -> Any | None:
        """The `xla.HloInstructionProto` named `name`, or None."""
        return self._instructions[1].get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._instructions[1]

    def _operands(self, instruction: Any) -> list[Any]:
        by_id = self._instructions[0]
        return [by_id[i] for i in instruction.operand_ids if i in by_id]

    # ---- costs --------------------------------------------------------------------------------
    def flops(self, instruction: Any) -> int:
        """FLOPs of one execution of an instruction (a fusion: of everything it calls)."""
        key = instruction.id
        if key not in self._flops_of:
            self._flops_of[key] = self._flops(instruction)
        return self._flops_of[key]

    def _flops(self, ins: Any) -> int:
        op = ins.opcode
        out = elements(ins.shape)
        if op in ELEMENTWISE:
            return out
        operands = self._operands(ins)
        if op == "dot" and operands:
            lhs = operands[0].shape.dimensions
            contracted = math.prod(lhs[d] for d in ins.dot_dimension_numbers.lhs_contracting_dimensions
                                   if d < len(lhs))
            return 2 * out * contracted
        if op == "convolution" and len(operands) > 1:
            kernel = operands[1].shape.dimensions
            numbers = ins.convolution_dimension_numbers
            spatial = math.prod(kernel[d] for d in numbers.kernel_spatial_dimensions
                                if d < len(kernel))
            features = kernel[numbers.kernel_input_feature_dimension] if len(kernel) else 1
            return 2 * out * spatial * features
        if op == "fusion":
            return sum(self._computation_cost(c) for c in ins.called_computation_ids)
        reducer = sum(self._computation_cost(c) for c in ins.called_computation_ids)
        if op == "reduce" and operands:
            inputs = operands[: max(1, len(operands) // 2)]
            result = ins.shape.tuple_shapes[0] if ins.shape.element_type == TUPLE else ins.shape
            return max(0, sum(elements(o.shape) for o in inputs) - elements(result)) * reducer
        if op == "reduce-window":
            window = math.prod(d.size for d in ins.window.dimensions) if ins.window.dimensions else 1
            return out * max(0, window - 1) * reducer
        if op == "scatter" and len(operands) >= 3:
            return elements(operands[-1].shape) * reducer
        if op in ("map", "all-reduce", "reduce-scatter", "all-reduce-start"):
            return out * reducer
        return 0

    def _computation_cost(self, computation_id: int) -> int:
        """FLOPs of one call of a computation: the sum over its instructions."""
        if computation_id not in self._computation_flops:
            self._computation_flops[computation_id] = 0  # guards against a cyclic proto
            computation = self._computations.get(computation_id)
            total = 0
            if computation is not None:
                for instruction in computation.instructions:
                    total += self.flops(instruction)
            self._computation_flops[computation_id] = total
        return self._computation_flops[computation_id]

    def bytes_accessed(self, instruction: Any) -> int:
        """Bytes one execution reads and writes: operands plus output, without layout padding."""
        if instruction.opcode in _NO_TRAFFIC:
            return 0
        reads = sum(array_bytes(o.shape) for o in self._operands(instruction))
        return reads + array_bytes(instruction.shape)

    # ---- naming -------------------------------------------------------------------------------
    def category(self, instruction: Any) -> str:
        """XProf-style category: `loop fusion`, `convolution fusion`, `data formatting`, ..."""
        op = instruction.opcode
        if op == "fusion":
            if self._calls_matmul(instruction):
                return "convolution fusion"
            kind = _FUSION_KINDS.get(instruction.fusion_kind, "")
            return f"{kind} fusion" if kind else "fusion"
        if op in _DATA_FORMATTING:
            return "data formatting"
        if op in ELEMENTWISE:
            return "non-fusion elementwise"
        return op

    def _calls_matmul(self, instruction: Any) -> bool:
        for cid in instruction.called_computation_ids:
            computation = self._computations.get(cid)
            if computation is None:
                continue
            for inner in computation.instructions:
                if inner.opcode in _MATMUL or (inner.opcode == "fusion"
                                               and self._calls_matmul(inner)):
                    return True
        return False

    def expression(self, instruction: Any) -> str:
        """The instruction as HLO text: `%name = shape opcode(operand shape %operand, ...)`."""
        operands = ", ".join(f"{shape_to_string(o.shape)} %{o.name}"
                             for o in self._operands(instruction))
        text = f"%{instruction.name} = {shape_to_string(instruction.shape)} " \
               f"{instruction.opcode}({operands})"
        extras = []
        if instruction.opcode == "fusion" and instruction.fusion_kind:
            extras.append(f"kind={instruction.fusion_kind}")
        if len(instruction.dimensions):
            extras.append("dimensions={" + ",".join(map(str, instruction.dimensions)) + "}")
        called = [self._computations[c].name for c in instruction.called_computation_ids
                  if c in self._computations]
        if called:
            key = "calls" if instruction.opcode == "fusion" else "to_apply"
            extras.append(f"{key}=" + ", ".join(f"%{c}" for c in called))
        return text + "".join(f", {e}" for e in extras)

    def source(self, instruction: Any) -> str:
        """`file:line` of the instruction's framework code, '' when the module does not say."""
        return self._module_view.source_of(instruction)

    def fused_ops(self, instruction: Any, depth: int = 1) -> list[FusedOp]:
        """The instructions a fusion calls (parameters left out), nested fusions expanded."""
        out: list[FusedOp] = []
        for cid in instruction.called_computation_ids if instruction.opcode == "fusion" else ():
            computation = self._computations.get(cid)
            for inner in computation.instructions if computation is not None else ():
                if inner.opcode == "parameter":
                    continue
                out.append(FusedOp(name=inner.name, opcode=inner.opcode,
                                   category=self.category(inner), flops=self.flops(inner),
                                   shape=shape_to_string(inner.shape),
                                   expression=self.expression(inner),
                                   framework_op=inner.metadata.op_name, depth=depth))
                if inner.opcode == "fusion":
                    out.extend(self.fused_ops(inner, depth + 1))
        return out


# ---- shapes ---------------------------------------------------------------------------------
def elements(shape: Any) -> int:
    """Elements of an array shape; of a tuple, the sum over its leaves."""
    if shape.element_type == TUPLE:
        return sum(elements(s) for s in shape.tuple_shapes)
    return math.prod(shape.dimensions)


def array_bytes(shape: Any) -> int:
    """Unpadded bytes of the arrays in a shape (a tuple: its leaves, not its pointer table)."""
    if shape.element_type == TUPLE:
        return sum(array_bytes(s) for s in shape.tuple_shapes)
    bits = PRIMITIVE_TYPES.get(shape.element_type, ("", 0))[1]
    return (math.prod(shape.dimensions) * bits + 7) // 8


@dataclass(frozen=True)
class ShapePadding:
    """What tiling does to a shape: sizes with and without the padding its tiles add."""

    shape: str
    unpadded_bytes: int
    padded_bytes: int
    padded_dims: str  # the tiled shape, e.g. `f32[8,128]` for f32[3,5] under T(8,128); '' if none

    @property
    def padding_bytes(self) -> int:
        return self.padded_bytes - self.unpadded_bytes


def shape_padding(text: str) -> ShapePadding | None:
    """Padding of a shape written as XLA prints it (`f32[3,5]{1,0:T(8,128)}`, tuples too).

    The first tile of a layout rounds the most-minor dimensions up to its sizes (T(8,128) pads
    the last two to multiples of 8 and 128); later tiles subdivide that tile and add nothing.
    None when the text holds no array shape.
    """
    arrays = _ARRAY.findall(text)
    if not arrays:
        return None
    unpadded = padded = 0
    padded_dims = []
    for dtype, dims_text, layout in arrays:
        bits = _BITS_BY_NAME.get(dtype, 0)
        dims = [int(d.lstrip("<=")) for d in dims_text.split(",") if d.strip()]
        tiled = list(dims)
        if layout and ":" in layout:
            minor_to_major_text, extra = layout.split(":", 1)
            minor_to_major = [int(d) for d in minor_to_major_text.split(",") if d.strip()]
            tile = re.match(r"T\(([^)]*)\)", extra)
            element_bits = re.search(r"E\((\d+)\)", extra)
            if element_bits:
                bits = int(element_bits.group(1))
            if tile and minor_to_major:
                sizes = [int(t) for t in tile.group(1).split(",") if t.strip().lstrip("-").isdigit()]
                # Tile sizes cover the most-minor dimensions, the last size the most minor one.
                for size, dim in zip(reversed(sizes), minor_to_major, strict=False):
                    if size > 0 and dim < len(tiled):
                        tiled[dim] = -(-tiled[dim] // size) * size
        unpadded += (math.prod(dims) * bits + 7) // 8
        padded += (math.prod(tiled) * bits + 7) // 8
        if tiled != dims:
            padded_dims.append(f"{dtype}[{','.join(map(str, tiled))}]")
    return ShapePadding(shape=text, unpadded_bytes=unpadded, padded_bytes=padded,
                        padded_dims=", ".join(padded_dims))
