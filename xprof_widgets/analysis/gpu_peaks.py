"""A GPU's peak FLOP rates per dtype and its memory bandwidth, for PyTorch (Kineto) traces.

Kineto's `deviceProperties` names the GPU and gives its SM (CU) count and compute capability,
but no clock and no memory bandwidth. So the peaks come from a table of known GPUs, matched by
name (and, where one name covers several parts, by memory size or SM count); a GPU not in the
table whose properties do state a clock (`clockRate`, kHz) gets XProf's estimate from SMs x
clock x FLOPs per SM per cycle of its compute capability, with no bandwidth.

The table holds dense rates (no 2:4 sparsity) per dtype: `fp32` is the vector (CUDA core) rate,
what a float32 op runs at unless TF32 is allowed; `tf32`, `bf16`, `fp16`, `fp8` the Tensor Core
(matrix core) rates. AMD's GPUs with two dies (MI250, MI250X) are two devices to PyTorch: a row
holds one die's (GCD's) half.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..profile.model import Profile
from .op_profile import GPU_FLOPS_PER_SM_CYCLE

TERA, GIGA = 1e12, 1e9
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class GpuPeaks:
    """One GPU's peaks: FLOP/s per dtype (absent: unknown) and HBM bytes/s (NaN: unknown)."""

    name: str
    flops: dict[str, float] = field(default_factory=dict)
    bandwidth: float = math.nan
    source: str = ""  # "table", "clock" or "" (nothing known)

    def flops_for(self, dtype: str) -> float:
        """Peak FLOP/s for ops of this dtype kind (DTYPES); NaN where unknown. A GPU without
        TF32 runs a float32 matrix op at its fp32 rate."""
        if dtype == "tf32" and dtype not in self.flops:
            dtype = "fp32"
        return float(self.flops.get(dtype, math.nan))


def _row(fp64: float, fp32: float, tf32: float, bf16: float, fp16: float, fp8: float,
         tb_per_s: float) -> tuple[dict[str, float], float]:
    rates = dict(zip(DTYPES, (fp64, fp32, tf32, bf16, fp16, fp8), strict=True))
    return {k: v * TERA for k, v in rates.items() if v > 0}, tb_per_s * 1e12


# (match, row): the first row whose every word is in the GPU's name (lower case) and whose
# memory (GiB, rounded) or SM count, where given, matches. TFLOP/s dense; TB/s. 0 = no such unit.
KNOWN: tuple[tuple[tuple[str, ...], dict[str, int], tuple[dict[str, float], float]], ...] = (
    # NVIDIA B200 (HGX B200 datasheet, per GPU; sparse figures halved)
    (("b200",), {}, _row(37, 75, 1100, 2250, 2250, 4500, 8.0)),
    # NVIDIA H200 SXM (H200 datasheet; same compute as H100 SXM, 4.8 TB/s HBM3e)
    (("h200",), {}, _row(34, 67, 494.5, 989.5, 989.5, 1979, 4.8)),
    # NVIDIA H100 NVL, PCIe, SXM5 (H100 datasheet; sparse figures halved)
    (("h100", "nvl"), {}, _row(30, 60, 417.5, 835, 835, 1670.5, 3.9)),
    (("h100", "pcie"), {}, _row(26, 51, 378, 756, 756, 1513, 2.0)),
    (("h100",), {}, _row(34, 67, 494.5, 989.5, 989.5, 1979, 3.35)),
    # NVIDIA A100 (A100 datasheet): 80 GB SXM 2039 GB/s, 80 GB PCIe 1935 GB/s, 40 GB 1555 GB/s
    (("a100", "pcie"), {"memory_gib": 80}, _row(9.7, 19.5, 156, 312, 312, 0, 1.935)),
    (("a100",), {"memory_gib": 80}, _row(9.7, 19.5, 156, 312, 312, 0, 2.039)),
    (("a100",), {}, _row(9.7, 19.5, 156, 312, 312, 0, 1.555)),
    # NVIDIA A10 (A10 datasheet); the A10G (AWS G5) has no datasheet of its own: the A10's
    (("a10g",), {}, _row(0, 31.2, 62.5, 125, 125, 0, 0.6)),
    (("a10",), {}, _row(0, 31.2, 62.5, 125, 125, 0, 0.6)),
    # NVIDIA L40S, L40 and L4 (their datasheets; sparse figures halved)
    (("l40s",), {}, _row(0, 91.6, 183, 362, 362, 733, 0.864)),
    (("l40",), {}, _row(0, 90.5, 90.5, 181, 181, 362, 0.864)),
    (("l4",), {}, _row(0, 30.3, 60, 121, 121, 242.5, 0.3)),
    # NVIDIA V100S PCIe, V100 PCIe, V100 SXM2 (V100 datasheet; Tensor Cores run fp16 only)
    (("v100s",), {}, _row(8.2, 16.4, 0, 0, 130, 0, 1.134)),
    (("v100", "pcie"), {}, _row(7, 14, 0, 0, 112, 0, 0.9)),
    (("v100",), {}, _row(7.8, 15.7, 0, 0, 125, 0, 0.9)),
    # NVIDIA T4 (T4 datasheet)
    (("t4",), {}, _row(0, 8.1, 0, 0, 65, 0, 0.32)),
    # AMD Instinct MI300X (304 CUs) and MI325X (AMD datasheets; dense)
    (("mi325x",), {}, _row(81.7, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 6.0)),
    (("mi300x",), {}, _row(81.7, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 5.3)),
    (("amd",), {"sms": 304}, _row(81.7, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 5.3)),
    # AMD Instinct MI250X, one of its two GCDs (110 CUs): half the MI250X datasheet's figures
    (("mi250x",), {}, _row(47.9, 47.9, 0, 191.5, 191.5, 0, 1.6)),
    (("amd",), {"sms": 110}, _row(47.9, 47.9, 0, 191.5, 191.5, 0, 1.6)),
    # AMD Instinct MI250 one GCD, or MI210 (104 CUs each: the MI210 datasheet's figures, which
    # are half the MI250's); fp32 is the packed-FP32 rate
    (("mi250",), {}, _row(45.3, 45.3, 0, 181, 181, 0, 1.6)),
    (("mi210",), {}, _row(45.3, 45.3, 0, 181, 181, 0, 1.6)),
    (("amd",), {"sms": 104}, _row(45.3, 45.3, 0, 181, 181, 0, 1.6)),
)


def gpu_peaks(properties: dict | None) -> GpuPeaks:
    """The peaks of the GPU that Kineto's `deviceProperties` entry describes (module doc)."""
    props = properties if isinstance(properties, dict) else {}
    name = str(props.get("name") or "GPU")
    lower = name.lower()
    memory_gib = round(float(props.get("totalGlobalMem", 0) or 0) / 2**30 / 8) * 8
    sms = int(props.get("numSms", 0) or 0)
    for words, where, (flops, bandwidth) in KNOWN:
        if all(w in lower for w in words) and where.get("sms", sms) == sms and \
                abs(where.get("memory_gib", memory_gib) - memory_gib) <= 8:
            return GpuPeaks(name, dict(flops), bandwidth, "table")
    clock_khz = float(props.get("clockRate", 0) or 0)
    major, minor = int(props.get("computeMajor", 0) or 0), int(props.get("computeMinor", 0) or 0)
    known = [cap for cap in GPU_FLOPS_PER_SM_CYCLE if cap <= (major, minor)]
    if clock_khz > 0 and sms > 0 and major and known and "amd" not in lower:
        peak = GPU_FLOPS_PER_SM_CYCLE[max(known)] * sms * clock_khz * 1e3
        return GpuPeaks(name, dict.fromkeys(("fp32", "tf32", "bf16", "fp16"), peak), math.nan,
                        "clock")
    return GpuPeaks(name)


def profile_gpu_peaks(profile: Profile) -> GpuPeaks | None:
    """The peaks of a Kineto profile's first GPU (its section's `deviceProperties`); None for
    a profile with no GPU properties."""
    for stats in profile.sections["stats"]:
        props = stats.get("device_properties") if isinstance(stats, dict) else None
        if isinstance(props, dict):
            return gpu_peaks(props)
    return None
