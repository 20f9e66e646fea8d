"""Whether a GPU kernel runs on TensorCores, and whether its op could: XProf's name rules
(xprof/utils/kernel_stats_utils.cc). The XSpace kernel stats use both, as XProf does; Kineto kernel
stats use the op rule here and, for the kernel, kernel_families.TENSOR_CORE_FAMILIES (wider, with
an "unknown": XProf's list predates Hopper's wgmma and AMD's MFMA names)."""

from __future__ import annotations

KERNEL_TC_PATTERNS = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm", "gemm_fusion", "Cijk_")
"""Substrings of kernel names that use TensorCores (XProf's list: volta_h884gemm, ...; XProf
2.24 adds XLA's Triton `gemm_fusion` and AMD's Tensile/hipBLASLt `Cijk_` GEMMs, read from its
answers on the JAX MI300X xplanes of tests/data/public/tracelens)."""
_ELIGIBLE_SUFFIXES = (
    "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D", "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "/MatMul",
    "FusedMatMul", "/CudnnRNN", "XlaDot", "XlaDotV2", "dot_general", "conv_general_dilated")
_ELIGIBLE_PARTS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")


def uses_tensor_core(kernel_name: str) -> bool:
    """Whether a kernel's name says it runs on TensorCores (XProf's pattern list)."""
    return any(p in kernel_name for p in KERNEL_TC_PATTERNS)


def is_op_eligible(op_name: str) -> bool:
    """Whether an op's name is one XProf knows could use TensorCores (matrix, convolution and
    RNN ops by their TensorFlow names, and, as XProf 2.24, JAX's `dot_general` and
    `conv_general_dilated`)."""
    return op_name.endswith(_ELIGIBLE_SUFFIXES) or any(p in op_name for p in _ELIGIBLE_PARTS)


def is_einsum_eligible(equation: str) -> bool:
    """Whether an einsum equation multiplies two operands (XProf's test for einsum ops)."""
    sides = equation.split("->")
    return bool(equation) and len(sides) == 2 and len(sides[0].split(",")) == 2
