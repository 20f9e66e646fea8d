"""FLOPs and bytes of PyTorch ops from their shapes, as AMD's TraceLens reads them.

A PyTorch profiler trace recorded with `record_shapes=True` gives each `cpu_op` its inputs'
`Input Dims` and `Input type` (newer PyTorch also `Concrete Inputs`: the scalar arguments as
text). From those, per op family (docs/pytorch.md, "Op FLOPs and bytes"):

- GEMM (`mm`, `addmm`, `bmm`, `baddbmm`, `addbmm`, `matmul`, `linear`, `_scaled_mm`,
  `_int_mm`): 2 x batch x M x K x N for [batch.., M, K] @ [batch.., K, N] (broadcast batch,
  a 1-D side counts as one row or column); `linear`'s weight is [N, K]. The bias or `input`
  added by `addmm`/`baddbmm`/`linear` is not counted, as PyTorch's own count (with_flops);
- attention (`scaled_dot_product_attention` and its flash, efficient, cuDNN and CPU variants,
  `_flash_attention_forward`, `_efficient_attention_forward`): 2 x B x H x Lq x Lk x (D + Dv)
  (scores and their product with V); half that where the trace says the mask is causal;
- convolution (`conv1d/2d/3d`, `convolution`, `_convolution`, `cudnn_convolution`,
  `mkldnn_convolution`, `miopen_convolution`): 2 x N x Cout x output pixels x Cin/groups x
  kernel size, the output size from stride, padding and dilation in `Concrete Inputs` (unknown
  without them); transposed convolutions from the input pixels; `convolution_backward`: the
  forward's FLOPs once per gradient its output mask asks for (input, weight), from grad_output;
- elementwise ops: one FLOP per output element (the inputs' broadcast shape); copies and fills
  none;
- reductions and normalizations: one FLOP per input element.

Bytes are every tensor input plus the output, each at its dtype's size: the least traffic the op
can have. A family's op without the shapes it needs (a trace without record_shapes) has unknown
FLOPs and bytes (NaN), never a guess. The trace's own `flops` arg (with_flops=True, where the
exporter writes it) is kept beside ours, and stands in for ops that have no rule here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..hosts import host_parts
from . import args_of, int_stat
from .operators import op_device_times

DTYPES = {
    "double": (8, "fp64"), "float": (4, "fp32"), "c10::BFloat16": (2, "bf16"),
    "c10::Half": (2, "fp16"), "c10::Float8_e4m3fn": (1, "fp8"), "c10::Float8_e5m2": (1, "fp8"),
    "c10::Float8_e4m3fnuz": (1, "fp8"), "c10::Float8_e5m2fnuz": (1, "fp8"),
    "long int": (8, "int"), "long": (8, "int"), "int": (4, "int"), "short int": (2, "int"),
    "short": (2, "int"), "signed char": (1, "int"), "unsigned char": (1, "int"),
    "bool": (1, "bool"), "c10::complex<float>": (8, "complex"),
    "c10::complex<double>": (16, "complex"), "c10::complex<c10::Half>": (4, "complex"),
}
"""`Input type` names of tensor dtypes: (bytes per element, kind; `gpu_peaks` rates by kind)."""


@dataclass(frozen=True)
class Cost:
    """One op call's work: FLOPs and bytes (NaN: unknown), its family and compute dtype kind."""

    family: str
    flops: float
    bytes: float
    dtype: str


@dataclass(frozen=True)
class Call:
    """What the trace says of one op call: its name and, per input, dims, type and value text."""

    name: str
    dims: Sequence
    types: Sequence
    concrete: Sequence

    def tensors(self) -> list[tuple[list[int], int, str]]:
        """The tensor inputs, in order: (shape, bytes per element, dtype kind)."""
        out = []
        for shape, kind in zip(self.dims, self.types, strict=False):
            if kind in DTYPES and isinstance(shape, list) and all(
                    type(d) is int for d in shape):
                out.append((shape, *DTYPES[kind]))
        return out

    def value(self, index: int) -> str:
        """The text of a scalar argument (`Concrete Inputs`), "" when the trace has none."""
        return str(self.concrete[index]) if index < len(self.concrete) else ""


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _bytes(tensors: list[tuple[list[int], int, str]], output: float, size: int) -> float:
    return float(sum(_numel(s) * b for s, b, _ in tensors) + output * size)


# ---- GEMM ------------------------------------------------------------------------------------
GEMM = {"aten::mm": (0, 1), "aten::bmm": (0, 1), "aten::matmul": (0, 1),
        "aten::_scaled_mm": (0, 1), "aten::_int_mm": (0, 1), "aten::addmm": (1, 2),
        "aten::addmm_": (1, 2), "aten::baddbmm": (1, 2), "aten::baddbmm_": (1, 2),
        "aten::addbmm": (1, 2), "aten::linear": (0, 1)}
"""GEMM ops and the positions of their two matrix inputs."""


def _gemm(call: Call, tensors: list) -> Cost | None:
    a_at, b_at = GEMM[call.name]
    shapes = [d if isinstance(d, list) else [] for d in call.dims]
    if len(shapes) <= b_at or len(call.types) <= b_at or call.types[a_at] not in DTYPES:
        return None
    a, b = list(shapes[a_at]), list(shapes[b_at])
    if not a or not b:
        return None
    if call.name == "aten::linear":  # weight [N, K]: x @ W.T
        b = b[::-1] if len(b) == 2 else b + [1]
    a2 = [1, *a] if len(a) == 1 else a
    b2 = [*b, 1] if len(b) == 1 else b
    m, k, n = a2[-2], a2[-1], b2[-1]
    try:
        batch = _numel(np.broadcast_shapes(tuple(a2[:-2]), tuple(b2[:-2])))
    except ValueError:
        return None
    if call.name == "aten::addbmm":  # a sum over the batch: one [M, N] out
        out = m * n
    else:
        out = batch * m * n
    size, kind = DTYPES[call.types[a_at]]
    return Cost("GEMM", float(2 * batch * m * k * n), _bytes(tensors, out, size), kind)


# ---- attention -------------------------------------------------------------------------------
ATTENTION = {
    # name: (layout of q/k/v, index of is_causal in Concrete Inputs)
    "aten::scaled_dot_product_attention": ("BHLD", 5),
    "aten::_scaled_dot_product_flash_attention": ("BHLD", 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": ("BHLD", 4),
    "aten::_scaled_dot_product_efficient_attention": ("BHLD", 6),
    "aten::_scaled_dot_product_cudnn_attention": ("BHLD", 6),
    "aten::_flash_attention_forward": ("BLHD", 8),
    "aten::_efficient_attention_forward": ("BLHD", 9),  # custom_mask_type: 0 none, else causal
}


def _attention(call: Call, tensors: list) -> Cost | None:
    layout, causal_at = ATTENTION[call.name]
    if len(tensors) < 3 or any(len(s) != 4 for s, _, _ in tensors[:3]):
        return None  # variable-length (packed 3-D) inputs: the lengths are not in the trace
    (q, size, kind), (k, _, _), (v, _, _) = tensors[:3]
    if layout == "BHLD":
        b, h, lq, d = q
        lk = k[2]
    else:
        b, lq, h, d = q
        lk = k[1]
    dv = v[-1]
    flops = 2.0 * b * h * lq * lk * (d + dv)
    causal = call.value(causal_at)
    if causal in ("True", "true") or (layout == "BLHD" and causal not in ("", "0", "False")):
        flops /= 2
    return Cost("attention", flops, _bytes(tensors[:3], b * h * lq * dv, size), kind)


# ---- convolution -----------------------------------------------------------------------------
CONVOLUTION = {
    # name: Concrete Inputs positions of (stride, padding, dilation, transposed, groups)
    "aten::conv1d": (3, 4, 5, None, 6), "aten::conv2d": (3, 4, 5, None, 6),
    "aten::conv3d": (3, 4, 5, None, 6), "aten::convolution": (3, 4, 5, 6, 8),
    "aten::_convolution": (3, 4, 5, 6, 8), "aten::cudnn_convolution": (3, 2, 4, None, 5),
    "aten::mkldnn_convolution": (4, 3, 5, None, 6), "aten::miopen_convolution": (4, 3, 5, None, 6),
}
CONVOLUTION_BACKWARD = "aten::convolution_backward"


def _ints(text: str, n: int) -> list[int] | None:
    """A list argument as `Concrete Inputs` writes it ("[1, 1]", or one int for every dim)."""
    text = text.strip()
    try:
        values = [int(v) for v in text.strip("[]").split(",") if v.strip()]
    except ValueError:
        return None
    if len(values) == 1:
        values = values * n
    return values if len(values) == n else None


def _conv_flops(x: list[int], w: list[int], out_pixels: int, in_pixels: int,
                transposed: bool) -> float:
    if transposed:  # weight [Cin, Cout / groups, k..]
        return 2.0 * x[0] * w[0] * in_pixels * w[1] * _numel(w[2:])
    return 2.0 * x[0] * w[0] * out_pixels * w[1] * _numel(w[2:])


def _convolution(call: Call, tensors: list) -> Cost | None:
    if len(tensors) < 2 or len(tensors[0][0]) < 3:
        return None
    (x, size, kind), (w, _, _) = tensors[:2]
    n = len(x) - 2
    s_at, p_at, d_at, t_at, _ = CONVOLUTION[call.name]
    stride, dilation = _ints(call.value(s_at), n), _ints(call.value(d_at), n)
    padding_text = call.value(p_at).strip("'\"")
    padding = [0] * n if padding_text == "valid" else _ints(padding_text, n)
    transposed = t_at is not None and call.value(t_at) in ("True", "true", "1")
    sides = zip(x[2:], w[2:], stride or [1] * n, padding or [0] * n, dilation or [1] * n,
                strict=True)
    if padding_text == "same":
        out = list(x[2:])
    elif stride is None or padding is None or dilation is None:
        return None  # the output size needs them: a trace without Concrete Inputs
    elif transposed:
        out = [(i - 1) * s - 2 * p + d * (k - 1) + 1 for i, k, s, p, d in sides]
    else:
        out = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in sides]
    cout = w[1] * _groups(call) if transposed else w[0]
    flops = _conv_flops(x, w, _numel(out), _numel(x[2:]), transposed)
    return Cost("convolution", flops, _bytes(tensors, x[0] * cout * _numel(out), size), kind)


def _groups(call: Call) -> int:
    text = call.value(CONVOLUTION[call.name][4])
    return int(text) if text.isdigit() else 1


def _convolution_backward(call: Call, tensors: list) -> Cost | None:
    """From grad_output [N, Cout, out..], input and weight: the forward's FLOPs per gradient
    asked for (input, weight; both where the output mask is not in the trace)."""
    if len(tensors) < 3:
        return None
    (g, size, kind), (x, _, _), (w, _, _) = tensors[:3]
    transposed = call.value(7) in ("True", "true", "1")
    mask = call.value(10).strip("[]").replace(" ", "").split(",")
    times = sum(m == "True" for m in mask[:2]) if len(mask) >= 2 else 2
    flops = _conv_flops(x, w, _numel(g[2:]), _numel(x[2:]), transposed) * times
    grads = _numel(x) * (mask[0] == "True" if len(mask) >= 2 else 1) + \
        _numel(w) * (mask[1] == "True" if len(mask) >= 2 else 1)
    return Cost("convolution", flops, _bytes(tensors, grads, size), kind)


# ---- elementwise and reductions ---------------------------------------------------------------
ELEMENTWISE = frozenset(f"aten::{n}" for n in (
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "abs", "exp",
    "log", "sqrt", "rsqrt", "pow", "reciprocal", "relu", "relu_", "gelu", "silu", "silu_",
    "sigmoid", "tanh", "hardtanh", "leaky_relu", "clamp", "clamp_", "clamp_min", "clamp_max",
    "where", "maximum", "minimum", "masked_fill", "masked_fill_", "addcmul", "addcmul_",
    "addcdiv", "addcdiv_", "lerp_", "threshold_backward", "gelu_backward", "silu_backward",
    "sigmoid_backward", "tanh_backward", "native_dropout", "cos", "sin", "erf"))
COPIES = frozenset(f"aten::{n}" for n in ("copy_", "clone", "fill_", "zero_"))
"""Elementwise ops that move data and compute nothing."""
SAME_SHAPE_REDUCTIONS = frozenset(f"aten::{n}" for n in (
    "softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data",
    "layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "batch_norm",
    "native_batch_norm", "_batch_norm_impl_index", "rms_norm", "_fused_rms_norm",
    "cumsum", "native_layer_norm_backward"))
"""Reductions and normalizations whose output has the input's shape."""
REDUCTIONS = frozenset(f"aten::{n}" for n in (
    "sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "linalg_vector_norm", "var",
    "std", "var_mean", "logsumexp", "argmax", "argmin", "any", "all"))
"""Reductions over `dim` (Concrete Inputs' second argument; every dim where not stated)."""


def _elementwise(call: Call, tensors: list) -> Cost | None:
    if not tensors:
        return None
    try:
        out = _numel(np.broadcast_shapes(*[tuple(s) for s, _, _ in tensors]))
    except ValueError:
        return None
    size = max(b for _, b, _ in tensors)
    kind = tensors[0][2]
    if call.name in ("aten::fill_", "aten::zero_"):
        return Cost("elementwise", 0.0, float(_numel(tensors[0][0]) * tensors[0][1]), kind)
    flops = 0.0 if call.name in COPIES else float(out)
    written = 0 if call.name in COPIES and call.name != "aten::clone" else out
    return Cost("elementwise", flops, _bytes(tensors, written, size), kind)


def _reduction(call: Call, tensors: list) -> Cost | None:
    if not tensors:
        return None
    shape, size, kind = tensors[0]
    if call.name in SAME_SHAPE_REDUCTIONS:
        out = _numel(shape)
    else:  # `dim` as "[0, 1]", "1" or "" / "[]" (every dim)
        text = call.value(1).strip("[]").replace(" ", "")
        try:
            dims = {int(v) % max(len(shape), 1) for v in text.split(",")} if text else set()
        except ValueError:
            dims = set()
        out = _numel([d for i, d in enumerate(shape) if i not in dims]) if dims else 1
    return Cost("reduction", float(_numel(shape)), _bytes(tensors, out, size), kind)


RULED = frozenset((*GEMM, *ATTENTION, *CONVOLUTION, CONVOLUTION_BACKWARD, *ELEMENTWISE, *COPIES,
                   *REDUCTIONS, *SAME_SHAPE_REDUCTIONS))
"""Every op name a rule here covers."""


def op_cost(call: Call) -> Cost | None:
    """The FLOPs and bytes of one op call (module doc); None for an op of no family here."""
    name = call.name
    tensors = call.tensors()
    if name in GEMM:
        return _gemm(call, tensors)
    if name in ATTENTION:
        return _attention(call, tensors)
    if name in CONVOLUTION:
        return _convolution(call, tensors)
    if name == CONVOLUTION_BACKWARD:
        return _convolution_backward(call, tensors)
    if name in ELEMENTWISE or name in COPIES:
        return _elementwise(call, tensors)
    if name in REDUCTIONS or name in SAME_SHAPE_REDUCTIONS:
        return _reduction(call, tensors)
    return None


# ---- per op call of a profile ------------------------------------------------------------------
MATRIX = ("GEMM", "attention", "convolution")
"""Families that run on Tensor (matrix) Cores: a float32 one may run in TF32 (PyTorch allows it
for convolutions by default, for matmuls with `allow_tf32`; the trace does not say which)."""
OCCURRENCE_COLUMNS = ["operation", "signature", "family", "dtype", "peak_dtype", "flops",
                      "trace_flops", "bytes", "outermost", "host_time_ps", "device_self_ps",
                      "device_total_ps", "achieved_tflops", "achieved_gbps"]
"""`op_flops`' columns: one row per op call with a cost (see `op_flops`)."""


def op_flops(profile: Profile) -> pd.DataFrame:
    """Every cpu_op call of a Kineto profile with FLOPs or bytes (see OCCURRENCE_COLUMNS):
    `signature` its tensor inputs (`aten::mm(float[64, 128], float[128, 32])`); `peak_dtype`
    the dtype whose peak rate it is held to (`tf32` for a float32 MATRIX op); `flops` ours,
    else the trace's own (`trace_flops`, NaN where it wrote none); `outermost` False for a call
    inside another call with FLOPs (a `linear`'s `addmm`: sums count the outer one); device
    self and total time: the GPU work it launched, and with the calls nested in it; achieved
    TFLOP/s and GB/s over the latter (NaN without GPU work). Summed over the profile's hosts
    (each host's part read where its events are)."""
    def build() -> pd.DataFrame:
        parts = [p.part for p in host_parts(profile, flop_part) if len(p.part)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            {c: pd.Series(dtype=object) for c in OCCURRENCE_COLUMNS})
    return profile.memo(("torch_op_flops",), build)


def flop_part(profile: Profile) -> pd.DataFrame:
    """One host's part of `op_flops`: its op calls with a cost. Only calls of a name some rule
    covers have their shapes read, and the rules run once per distinct (name, dims, types,
    scalar arguments), not per call."""
    found = op_device_times(profile)
    if found is None:
        return pd.DataFrame()
    ops, names, host_ps, device_self, device_total, last = found
    present, stated = int_stat(profile, ops, "flops")
    trace_flops = np.where(present, stated.astype(np.float64), math.nan)
    ours, moved = np.full((2, ops.shape[0]), math.nan)
    family, dtype, signature = (np.full(ops.shape[0], "", object) for _ in range(3))
    signature[:] = names
    at = np.flatnonzero(pd.Series(names, dtype=object).isin(RULED).to_numpy())
    if at.shape[0]:
        args = args_of(profile, ops[at], ("Input Dims", "Input dims", "Input type",
                                          "Concrete Inputs"))
        dims = np.where(pd.isna(args["Input Dims"]), args["Input dims"], args["Input Dims"])
        types, concrete = args["Input type"], args["Concrete Inputs"]
        keys = pd.Series([f"{n}\x00{d}\x00{t}\x00{c}" for n, d, t, c in zip(
            names[at].tolist(), dims.tolist(), types.tolist(), concrete.tolist(), strict=True)],
            dtype=object)
        codes, uniques = pd.factorize(keys)
        first = np.full(len(uniques), -1, np.int64)
        first[codes[::-1]] = np.arange(len(codes))[::-1]
        costs = [_cost_of(names[at[i]], dims[i], types[i], concrete[i]) for i in first.tolist()]
        family[at] = np.array([c.family if c else "" for c in costs], object)[codes]
        dtype[at] = np.array([c.dtype if c else "" for c in costs], object)[codes]
        ours[at] = np.array([c.flops if c else math.nan for c in costs], np.float64)[codes]
        moved[at] = np.array([c.bytes if c else math.nan for c in costs], np.float64)[codes]
        signature[at] = np.array([_signature(names[at[i]], dims[i], types[i])
                                  for i in first.tolist()], object)[codes]
    flops = np.where(np.isnan(ours), trace_flops, ours)
    keep = ~np.isnan(flops) | ~np.isnan(moved)
    return pd.DataFrame({
        "operation": names, "signature": signature,
        "family": np.where(family == "", "other", family),
        "dtype": dtype, "peak_dtype": np.where((dtype == "fp32") & np.isin(family, MATRIX),
                                                "tf32", dtype),
        "flops": flops, "trace_flops": trace_flops, "bytes": moved,
        "outermost": ~_inside_counted(np.nan_to_num(flops) > 0, last),
        "host_time_ps": host_ps, "device_self_ps": device_self,
        "device_total_ps": device_total, **_achieved(flops, moved, device_total),
    })[keep].reset_index(drop=True)


def _achieved(flops: np.ndarray, moved: np.ndarray, device_ps: np.ndarray
              ) -> dict[str, np.ndarray]:
    """TFLOP/s and GB/s over the GPU work a call and the calls inside it launched; NaN for a
    call that launched none."""
    seconds = np.where(device_ps > 0, device_ps / 1e12, np.nan)
    return {"achieved_tflops": flops / seconds / 1e12, "achieved_gbps": moved / seconds / 1e9}


def _cost_of(name: object, dims: object, types: object, concrete: object) -> Cost | None:
    """A call's cost, None where its args are not the lists a rule reads (or hold a shape no
    rule can use: a malformed trace loses that call's cost, not the table)."""
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    try:
        return op_cost(Call(str(name), dims, types,
                            concrete if isinstance(concrete, list) else []))
    except (ValueError, IndexError, TypeError, ZeroDivisionError):
        return None


def _signature(name: object, dims: object, types: object) -> str:
    """`aten::mm(float[64, 128], float[128, 32])`: the op and its tensor inputs."""
    if not isinstance(dims, list) or not isinstance(types, list):
        return str(name)
    inputs = [f"{t}{d}" for d, t in zip(dims, types, strict=False)
              if t in DTYPES and isinstance(d, list)]
    return f"{name}({', '.join(inputs)})"


def _inside_counted(counted: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Per call (outer before inner per thread; call i holds calls i+1..last-1): whether a call
    around it has FLOPs of its own."""
    n = counted.shape[0]
    cover = np.zeros(n + 1, np.int64)
    at = np.flatnonzero(counted)
    np.add.at(cover, np.minimum(at + 1, n), 1)
    np.add.at(cover, last[at], -1)
    return np.cumsum(cover)[:n] > 0
