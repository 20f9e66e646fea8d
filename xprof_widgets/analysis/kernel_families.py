"""What a GPU kernel does, read from its name: the one place that decides which kernels
communicate and which run on TensorCores (MMA units), each rule a named family with the
source that documents its kernel names.

Why tables: a GPU trace states neither fact. Only the kernel's name hints at it, and each
library names its kernels its own way (NCCL `ncclDevKernel_*`, DeepEP `deep_ep::internode::*`,
cuBLAS `sm90_xmma_gemm_*`, hipBLASLt `Cijk_*_MI16x16x1_*`). One ordered table per question keeps
every analysis (GPU time breakdowns, the Overview, Kernel Stats) on the same rule, and the docs
(docs/pytorch.md) list the same rows.

- COMMUNICATION_FAMILIES: a kernel moves data between GPUs (collectives, all-to-all,
  one-sided puts). HTA types only `^nccl.*Kernel` as communication; ours is wider
  (docs/from_hta.md).
- TENSOR_CORE_FAMILIES: a communication kernel is "no" (collectives reduce on CUDA cores);
  otherwise "yes" where the name names an MMA instruction or a library family built
  on it, "no" where it names a family known to run without MMA (SIMT GEMMs, elementwise,
  reductions...), first match wins; every other kernel is "unknown" (a Triton kernel, a custom
  CUDA kernel): its name does not say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

YES, NO, UNKNOWN = "yes", "no", "unknown"
"""Tensor Core use of a kernel, as its name tells it."""


@dataclass(frozen=True)
class Family:
    """One rule: kernels whose name matches `pattern` (re.search) belong to `name`; `source`
    says where such names come from; `verdict` is the Tensor Core answer (TC table only)."""

    name: str
    pattern: str
    source: str
    verdict: str = ""


COMMUNICATION_FAMILIES = (
    Family("NCCL", r"(?i)nccl", "NVIDIA NCCL src/device (ncclDevKernel_*, ncclKernel_*); "
           "HTA's rule is ^nccl.*Kernel"),
    Family("RCCL", r"(?i)rccl", "ROCm RCCL (AMD's NCCL: most of its kernels keep the nccl names)"),
    Family("DeepEP", r"dpsk::ep::|deep_ep::|(?i:deepep)",
           "deepseek-ai/DeepEP csrc/kernels (deep_ep::intranode/internode/internode_ll "
           "dispatch, combine); dpsk::ep:: in DeepSeek's own builds"),
    Family("Symmetric memory", r"multimem_|one_shot_all_reduce|two_shot_all_reduce|"
           r"symm_mem", "PyTorch torch/csrc/distributed/c10d/symm_mem/"
           "CUDASymmetricMemoryOps.cu and torch.distributed._symmetric_memory (Triton)"),
    Family("NVSHMEM", r"(?i)nvshmem", "NVIDIA NVSHMEM device kernels (nvshmemi_*, nvshmem_*)"),
    Family("Custom all-reduce / all-to-all",
           r"(?i)cross_device_reduce|custom_?all_?reduce|all_?to_?all|allreduce_fusion|"
           r"(?:one|two)ShotAllReduce|lamport",
           "vLLM csrc/custom_all_reduce.cuh (cross_device_reduce_1stage/2stage), "
           "TensorRT-LLM customAllReduceKernels (oneShotAllReduceKernel, allreduce_fusion, "
           "lamport), all_to_all / alltoall kernels of MoE libraries"),
)
"""Kernels that communicate, by family; the first family that matches names the kernel's."""

_YES_SOURCE = "XProf xprof/utils/kernel_stats_utils.cc (IsKernelUsingTensorCore)"
TENSOR_CORE_FAMILIES = (
    Family("XProf's list", r"16816|c1688|conv1x1|conv2d_c1_k1|dgrad_1x1_stride_2x2|"
           r"direct_group|first_layer_wgrad_kernel|h1688|h884|hmma|i16832|i8816|s884|s1688|"
           r"xmma_gemm|xmma_implicit_gemm|xmma_sparse_conv|xmma_sparse_gemm|"
           r"xmma_warp_specialized_implicit_gemm", _YES_SOURCE, YES),
    Family("Hopper/Blackwell MMA (wgmma, gmma, tcgen05)", r"(?i)wgmma|gmma|tcgen05|umma",
           "CUTLASS 3 mainloops (MainloopSm90TmaGmma*, Sm100 UMMA); PTX wgmma.mma_async", YES),
    Family("cuBLAS/cuDNN xmma and nvjet", r"(?i)xmma|nvjet",
           "cuBLAS/cuDNN sm80_xmma_*, sm90_xmma_*; cuBLAS 12 nvjet_* GEMMs on Hopper", YES),
    Family("CUTLASS tensorop / wmma", r"(?i)tensorop|wmma|cutlass3x_sm(?:90|100|120)",
           "CUTLASS 2 cutlass_80_tensorop_*, cutlass_75_wmma_*; CUTLASS 3 cutlass3x_sm90_*", YES),
    Family("Integer / FP64 MMA (imma, dmma)", r"(?i)_imma|imma_|_dmma|dmma_",
           "cuBLAS/CUTLASS integer (imma) and FP64 (dmma, sm80+) MMA kernels", YES),
    Family("AMD MFMA (hipBLASLt/Tensile Cijk, CK xdl)", r"^Cijk_.*_MI\d+x\d+|(?i:_xdl|xdlops)",
           "Tensile/hipBLASLt kernel names (MI = MatrixInstruction, MFMA); composable_kernel "
           "DeviceGemmXdl*", YES),
    Family("FlashAttention / fused MHA", r"(?i)flash_fwd|flash_bwd|flash::|flashattn|"
           r"fmha(?!_cutlass[fb]_f32)",
           "Dao-AILab flash-attention (flash_fwd_kernel, flash::FlashAttnFwdSm90); PyTorch "
           "mem-efficient fmha_cutlassF/B (its f32 variants stay unknown: TF32 MMA on sm80+, "
           "SIMT before); cuDNN/TensorRT fmha kernels", YES),
    Family("SIMT GEMM / convolution", r"(?i)sgemm|scudnn|gcgemm|_simt_|gemv|gemmSN|gemmk1",
           "cuBLAS ampere_sgemm_*, volta_sgemm_*, gemv2T_kernel; cuDNN *_scudnn_*; "
           "CUTLASS cutlass_80_simt_*: FP32 CUDA cores, no MMA", NO),
    Family("PyTorch elementwise / reduce / copy",
           r"elementwise_kernel|reduce_kernel|CatArrayBatchedCopy|fill_kernel|"
           r"index_elementwise|indexSelect|index_select|scatter_gather|"
           r"multi_tensor_apply|distribution_elementwise|Memcpy|Memset",
           "PyTorch aten/src/ATen/native/cuda (Loops.cuh, Reduce.cuh, Shape.cu, "
           "MultiTensorApply.cuh): per-element loads, math on CUDA cores", NO),
    Family("PyTorch normalization / softmax / pooling",
           r"(?i)layer_?norm|batch_?norm|group_?norm|rms_?norm|GammaBeta|RowwiseMoments|"
           r"softmax|max_pool|avg_pool|adaptive_?(?:max|avg)|upsample",
           "PyTorch aten/src/ATen/native/cuda (layer_norm_kernel.cu, Normalization.cuh, "
           "SoftMax.cu, pooling kernels)", NO),
    Family("Embedding / index bookkeeping", r"(?i)embedding|bounds_check_indices|"
           r"linearize_index|permute_\w*_kernel|permute_pooled_embs",
           "PyTorch Embedding.cu/EmbeddingBag.cu; FBGEMM-GPU (bounds_check_indices, permute_2D_*, "
           "split_embedding_*): gathers and scatters", NO),
    Family("CUB / Thrust primitives", r"cub::|thrust::",
           "NVIDIA CCCL (cub::DeviceScanKernel, DeviceRadixSort*, thrust::...): scans, sorts", NO),
    Family("cuDNN / cuBLAS helper kernels", r"cudnn::bn_|bn_fw_|bn_bw_|nchwToNhwc|nhwcToNchw|"
           r"compute\w*OffsetsKernel|epilogue::impl::globalKernel|scalePackedTensor|"
           r"reduce_wgrad|ReduceSplitK",
           "cuDNN batch norm, layout transforms and offset setup; cuBLASLt's separate epilogue; "
           "CUTLASS split-K reduction: elementwise work around the GEMM, no MMA", NO),
)
"""Tensor Core use by family, first match wins (yes families first); else UNKNOWN."""


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _first(families: tuple[Family, ...], name: str) -> Family | None:
    return next((f for f in families if _compiled(f.pattern).search(name)), None)


@lru_cache(maxsize=65536)
def communication_family(name: str) -> str | None:
    """The communication family of a kernel by its name, None for a kernel that does not
    communicate (memoized: a trace repeats few names many times)."""
    found = _first(COMMUNICATION_FAMILIES, name)
    return found.name if found else None


def is_communication(name: str) -> bool:
    """Whether a kernel's name says it moves data between GPUs (COMMUNICATION_FAMILIES)."""
    return communication_family(name) is not None


@lru_cache(maxsize=65536)
def tensor_core_family(name: str) -> tuple[str, str | None]:
    """(yes / no / unknown, the family that decided it or None): whether a kernel runs on
    TensorCores as its name tells. A communication kernel is "no": collectives reduce on CUDA
    cores."""
    family = communication_family(name)
    if family is not None:
        return NO, family
    found = _first(TENSOR_CORE_FAMILIES, name)
    return (found.verdict, found.name) if found else (UNKNOWN, None)


def tensor_core_use(name: str) -> str:
    """yes / no / unknown: whether a kernel runs on TensorCores, as its name tells."""
    return tensor_core_family(name)[0]
