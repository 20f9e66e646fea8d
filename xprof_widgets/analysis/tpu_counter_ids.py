"""TPU v6e ("TPU v6 Lite") performance-counter ids that XProf's utilization viewer reads.

The ids are facts of the chip's register map, as XProf lists them (xprof/utils/
tpu_counter_ids_v6e.h): each family is a base address plus fixed strides, so they are kept here
as bases and offsets (8 bytes a register) rather than as a table of 684 numbers.
"""

from __future__ import annotations

_TC_BASE = 3_257_466_888  # TensorCore `tcs_stats` counters, 8 bytes apart
TC_SLOT = {
    "CYCLES": 0, "SCALAR_ALU_INSTRUCTION_0": 10, "SCALAR_ALU_INSTRUCTION_1": 11,
    "VECTOR_ALU_INSTRUCTION_0": 31, "VECTOR_ALU_INSTRUCTION_1": 32,
    "VECTOR_ALU_INSTRUCTION_2": 33, "VECTOR_ALU_INSTRUCTION_3": 34, "VST_INSTRUCTION": 35,
    "VLD_INSTRUCTION_0": 37, "VLD_INSTRUCTION_1": 38,
    "MATMUL_VREG_F32_MXU_0": 48, "MATMUL_VREG_F32_MXU_1": 49,
    "MATMUL_VREG_BF16_MXU_0": 50, "MATMUL_VREG_BF16_MXU_1": 51,
    "MATMUL_VREG_F8_MXU_0": 52, "MATMUL_VREG_F8_MXU_1": 53,
    "MATMUL_VREG_I8_MXU_0": 54, "MATMUL_VREG_I8_MXU_1": 55,
    "MATMUL_VREG_I4_MXU_0": 56, "MATMUL_VREG_I4_MXU_1": 57,
    "MATMUL_LMR_BF16_MXU_0": 58, "MATMUL_LMR_BF16_MXU_1": 59,
    "MATMUL_LMR_I8_MXU_0": 60, "MATMUL_LMR_I8_MXU_1": 61,
    "MATMUL_LMR_I4_MXU_0": 62, "MATMUL_LMR_I4_MXU_1": 63,
    "MXU_BUSY_0": 64, "MXU_BUSY_1": 65, "MXU_BUSY_2": 66,
    "MATPUSH_CYCLES_MXU_0": 69, "MATPUSH_CYCLES_MXU_1": 70,
    "ROTATE_PERMUTE_INSTRUCTION_XLU_0": 73, "ROTATE_PERMUTE_INSTRUCTION_XLU_1": 74,
    "ROTATE_PERMUTE_SET_INSTRUCTION_XLU_0": 75, "ROTATE_PERMUTE_SET_INSTRUCTION_XLU_1": 76,
    "TRANSPOSE_XLU_0": 77, "TRANSPOSE_XLU_1": 78, "PACKED_XLU_0": 79, "PACKED_XLU_1": 80,
    "XLU_BUSY_0": 81, "XLU_BUSY_1": 82, "XLU_BUSY_2": 83,
    **{f"VPU_VALU_{kind}_OPS_{i}": 211 + 4 * k + i
       for k, kind in enumerate(("FADD", "FMUL", "MISC", "INT", "FMAC")) for i in range(4)},
}

_SC_TILE_BASE = (3_490_185_224, 3_534_225_416)  # SparseCore 0/1, tile 0's CYCLES
_SC_TILE_STRIDE = 2_097_152
SC_TILE_OFFSET = {
    "CYCLES": 0, "TEC_SCALAR_ISSUE": 480, "TEC_S0_INSTRUCTION": 496, "TEC_S1_INSTRUCTION": 504,
    "TEC_SMISC_INSTRUCTION": 512, "VECTOR_ISSUE": 952, "V0_INSTRUCTION": 960,
    "V1_INSTRUCTION": 968, "V2_INSTRUCTION": 976, "VLD_INSTRUCTION": 984,
    "VST_INSTRUCTION": 992, "VRES_INSTRUCTION": 1000, "VEX_INSTRUCTION": 1008,
}
SC_TILES = 16
_SCS_BASE = (3_532_193_800, 3_576_233_992)  # each SparseCore's sequencer
SCS_OFFSET = {"CYCLES": 0, "SCALAR_ISSUE": 8, "S0_INSTRUCTION": 24, "S1_INSTRUCTION": 32,
              "SMISC_INSTRUCTION": 40}

_HBM_BASE, _HBM_STRIDE, _HBMC_STRIDE = 3_019_980_856, 33_554_432, 2_097_152  # RD_RESP_PS0
HBM_OFFSET = {"RD_RESP_PS0": 0, "RD_RESP_PS1": 8, "WR_REQ_PS0": -32, "WR_REQ_PS1": -24,
              "PARTIAL_WRITE_REQ_PS0": -16, "PARTIAL_WRITE_REQ_PS1": -8}
HBM_STACKS, HBM_CHANNELS = 2, 16
_ICI_BASE = 2_953_257_136  # BN_{RD,WR}_REQ_{0,1}_INSERTION_COUNT, 56 bytes apart
ICI_SLOT = {"RD_0": 0, "RD_1": 1, "WR_0": 2, "WR_1": 3}


def tc(name: str) -> int:
    return _TC_BASE + 8 * TC_SLOT[name]


def sc_tile(core: int, tile: int, name: str) -> int:
    return _SC_TILE_BASE[core] + tile * _SC_TILE_STRIDE + SC_TILE_OFFSET[name]


def scs(core: int, name: str) -> int:
    return _SCS_BASE[core] + SCS_OFFSET[name]


def hbm(stack: int, channel: int, name: str) -> int:
    return _HBM_BASE + stack * _HBM_STRIDE + channel * _HBMC_STRIDE + HBM_OFFSET[name]


def ici(name: str) -> int:
    return _ICI_BASE + 56 * ICI_SLOT[name]
