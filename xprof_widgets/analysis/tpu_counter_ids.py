"""TPU performance-counter ids that XProf's utilization viewer reads, for v6e ("TPU v6 Lite") and
v7x ("TPU v7x").

The ids are facts of the chips' register maps, as XProf lists them (xprof/utils/
tpu_counter_ids_v6e.h, tpu_counter_ids_v7x.h): each family is a base address plus fixed strides
(8 bytes a register; on v7x a die 2**29 bytes on), so they are kept here as bases and offsets
rather than as tables of thousands of numbers. `tests/unit/test_xprof_counters_tools.py` checks
samples of them against the headers' values.
"""

from __future__ import annotations

from dataclasses import dataclass

_VPU = {f"VPU_VALU_{kind}_OPS_{i}": 211 + 4 * k + i
        for k, kind in enumerate(("FADD", "FMUL", "MISC", "INT", "FMAC")) for i in range(4)}
_TC_COMMON = {
    "CYCLES": 0, "SCALAR_ALU_INSTRUCTION_0": 10, "SCALAR_ALU_INSTRUCTION_1": 11,
    "VECTOR_ALU_INSTRUCTION_0": 31, "VECTOR_ALU_INSTRUCTION_1": 32,
    "VECTOR_ALU_INSTRUCTION_2": 33, "VECTOR_ALU_INSTRUCTION_3": 34, "VST_INSTRUCTION": 35,
    "VLD_INSTRUCTION_0": 37, "VLD_INSTRUCTION_1": 38,
    "MATMUL_VREG_F32_MXU_0": 48, "MATMUL_VREG_F32_MXU_1": 49,
    "MATMUL_VREG_BF16_MXU_0": 50, "MATMUL_VREG_BF16_MXU_1": 51,
    "MATMUL_VREG_F8_MXU_0": 52, "MATMUL_VREG_F8_MXU_1": 53, **_VPU,
}
_TC_V6E = {  # TensorCore `tcs_stats` registers: slot numbers, 8 bytes apart
    **_TC_COMMON,
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
}
_TC_V7X = {
    **_TC_COMMON,
    "MATMUL_LMR_BF16_MXU_0": 54, "MATMUL_LMR_BF16_MXU_1": 55,
    "MXU_BUSY_0": 56, "MXU_BUSY_1": 57, "MXU_BUSY_2": 58,
    "MATPUSH_CYCLES_MXU_0": 61, "MATPUSH_CYCLES_MXU_1": 62,
    "ROTATE_PERMUTE_INSTRUCTION_XLU_0": 65, "ROTATE_PERMUTE_INSTRUCTION_XLU_1": 66,
    "ROTATE_PERMUTE_SET_INSTRUCTION_XLU_0": 67, "ROTATE_PERMUTE_SET_INSTRUCTION_XLU_1": 68,
    "TRANSPOSE_XLU_0": 69, "TRANSPOSE_XLU_1": 70, "PACKED_XLU_0": 71, "PACKED_XLU_1": 72,
    "XLU_BUSY_0": 73, "XLU_BUSY_1": 74, "XLU_BUSY_2": 75,
}
SC_TEC_OFFSET = {"TEC_SCALAR_ISSUE": 8, "TEC_S0_INSTRUCTION": 24, "TEC_S1_INSTRUCTION": 32,
                 "TEC_SMISC_INSTRUCTION": 40}
"""A SparseCore tile's scalar (TEC) issue registers, from the tile's TEC base."""
SC_VECTOR_OFFSET = {"VECTOR_ISSUE": 0, "V0_INSTRUCTION": 8, "V1_INSTRUCTION": 16,
                    "V2_INSTRUCTION": 24, "VLD_INSTRUCTION": 32, "VST_INSTRUCTION": 40,
                    "VRES_INSTRUCTION": 48, "VEX_INSTRUCTION": 56}
SCS_OFFSET = {"CYCLES": 0, "SCALAR_ISSUE": 8, "S0_INSTRUCTION": 24, "S1_INSTRUCTION": 32,
              "SMISC_INSTRUCTION": 40}
HBM_OFFSET = {"RD_RESP_PS0": 0, "RD_RESP_PS1": 8, "WR_REQ_PS0": -32, "WR_REQ_PS1": -24,
              "PARTIAL_WRITE_REQ_PS0": -16, "PARTIAL_WRITE_REQ_PS1": -8}
PWR_OFFSET = {"CYCLE_COUNT": 0, "CLOCKS_SKIPPED": 8, "EXT_THROTTLE_CLOCKS_SKIPPED": 32,
              "LDIDT_DROOP_CLOCKS_SKIPPED": 56}
SC_TILES, DIE = 16, 1 << 29


@dataclass(frozen=True)
class Chip:
    """One chip's register map: bases (die 0, SparseCore 0, tile 0, HBM stack and channel 0)
    and strides."""

    tc_base: int
    tc_slot: dict[str, int]
    sc_base: tuple[int, int]  # each SparseCore's tile-0 TEC base
    sc_cycles: int  # from there to tile 0's CYCLES
    sc_vector: int  # from a tile's TEC base to its VECTOR_ISSUE
    tec_stride: int
    vector_stride: int
    scs: int  # from the SparseCore's tile-0 TEC base to its sequencer's CYCLES
    hbm_base: int  # RD_RESP_PS0 of stack 0, channel 0
    hbm_stacks: int
    hbm_stack_stride: int
    hbm_channel_stride: int
    ici: tuple[int, ...]  # the BN_RD_REQ INSERTION_COUNTs read
    ici_write: int  # from each to its BN_WR_REQ INSERTION_COUNT
    pwr_base: int = 0  # power manager's CYCLE_COUNT (v7x)

    def tc(self, name: str, die: int = 0) -> int:
        return self.tc_base + die * DIE + 8 * self.tc_slot[name]

    def tec(self, core: int, tile: int, name: str, die: int = 0) -> int:
        offset = self.sc_cycles if name == "CYCLES" else SC_TEC_OFFSET[name]
        return self.sc_base[core] + die * DIE + tile * self.tec_stride + offset

    def vector(self, core: int, tile: int, name: str, die: int = 0) -> int:
        return (self.sc_base[core] + die * DIE + self.sc_vector + tile * self.vector_stride
                + SC_VECTOR_OFFSET[name])

    def sequencer(self, core: int, name: str, die: int = 0) -> int:
        return self.sc_base[core] + die * DIE + self.scs + SCS_OFFSET[name]

    def hbm(self, stack: int, channel: int, name: str, die: int = 0) -> int:
        return (self.hbm_base + die * DIE + stack * self.hbm_stack_stride
                + channel * self.hbm_channel_stride + HBM_OFFSET[name])

    def ici_insertions(self, direction: str) -> list[int]:
        return [read + (self.ici_write if direction == "WR" else 0) for read in self.ici]

    def pwr(self, name: str, die: int = 0) -> int:
        return self.pwr_base + die * DIE + PWR_OFFSET[name]


V6E = Chip(tc_base=3_257_466_888, tc_slot=_TC_V6E,
           sc_base=(3_490_185_696, 3_534_225_888), sc_cycles=-472, sc_vector=480,
           tec_stride=2_097_152, vector_stride=2_097_152, scs=42_008_104,
           hbm_base=3_019_980_856, hbm_stacks=2, hbm_stack_stride=33_554_432,
           hbm_channel_stride=2_097_152, ici=(2_953_257_136, 2_953_257_192), ici_write=112)
V7X = Chip(tc_base=2_791_874_568, tc_slot=_TC_V7X, sc_base=(2_792_513_544, 2_819_776_520),
           sc_cycles=0, sc_vector=16_769_032, tec_stride=1_048_576, vector_stride=524_288, scs=25_407_488,
           hbm_base=2_705_724_472, hbm_stacks=4, hbm_stack_stride=2_097_152,
           hbm_channel_stride=131_072,
           ici=(3_238_449_440, 3_238_482_208, 3_238_514_976, 3_238_547_744), ici_write=56,
           pwr_base=2_847_490_056)
