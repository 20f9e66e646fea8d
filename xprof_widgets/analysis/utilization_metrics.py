"""The utilization viewer's metrics per TPU chip, as XProf computes them
(xprof/convert/tpu_generic_utilization_utils.cc, xplane_to_utilization_viewer.cc): each a
weighted sum of counters (achieved) against a peak, in the order XProf lists them.

Per sample: for each TensorCore, its units (XProf skips them when the core's cycle count is 0),
its HBM bytes and their read/write split, and the chip's ICI bytes (XProf adds these once per
TensorCore: twice on v7x); then each SparseCore's issue slots, always.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tpu_counter_ids import SC_TILES, V6E, V7X, Chip

_GIB = 1024.0**3
_HBM_BYTES_PER_BEAT, _ICI_BYTES_PER_FLIT, _MXUS = 32, 128, 2
_PEAK_ICI_BPS = 294947368421.0526  # XProf's ICI peak, over cycles taken at 1 GHz
_CPI = {"LMR_BF16": 4, "VREG_F8": 8, "VREG_BF16": 8, "VREG_F32": 4, "LMR_I8": 2, "VREG_I8": 8,
        "LMR_I4": 2, "VREG_I4": 8}  # MXU cycles per matmul instruction


@dataclass(frozen=True)
class Metric:
    name: str
    node: int
    terms: tuple[tuple[int, int], ...]  # (counter id, weight): achieved = sum / divisor
    peak: tuple  # ("x", id, k): k * counter; ("div", id, k): counter // k;
    #              ("rate", id, bytes/s, hz): bytes/s * counter / hz; ("of", name): that sum
    unit: str
    gate: int | None  # a counter that must be non-zero for XProf to list the row
    divisor: int = 1
    share_of: str | None = None  # a row listed only when that metric's sum is non-zero


@dataclass(frozen=True)
class ChipSpec:
    chip: Chip
    tensor_cores: int
    frequency_hz: float
    peak_hbm_bps: float
    xlu_cpi: int  # cycles per XLU instruction
    mxu_types: dict[str, tuple[str, ...]]  # per-type MXU rows: matmul kinds counted
    throttle: bool  # v7x: clocks skipped, read from the power manager
    vector_names: tuple[str, ...]  # XProf's spellings of the SparseCore vector slots


def _tensor_core(spec: ChipSpec, core: int) -> list[Metric]:
    chip, die = spec.chip, core  # v7x: TensorCore n is die n's

    def counters(*names: str, weight: int = 1) -> tuple[tuple[int, int], ...]:
        return tuple((chip.tc(n, die), weight) for n in names)

    def mxu(unit: int, kinds: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
        return tuple((chip.tc(f"MATMUL_{k}_MXU_{unit}", die), _CPI[k]) for k in kinds)

    cycles = chip.pwr("CYCLE_COUNT", die) if spec.throttle else chip.tc("CYCLES", die)

    def row(name, terms, k=1, unit="instructions", divisor=1) -> Metric:
        return Metric(name, core, terms, ("x", cycles, k), unit, cycles, divisor)

    out = [row(label, ((chip.pwr(reg, die), 1),), unit="cycles") for label, reg in (
        ("Clocks Skipped", "CLOCKS_SKIPPED"),
        ("Ext Throttle Clocks Skipped", "EXT_THROTTLE_CLOCKS_SKIPPED"),
        ("LDIDT Droop Clocks Skipped", "LDIDT_DROOP_CLOCKS_SKIPPED"))] if spec.throttle else []
    every = tuple(k for kinds in spec.mxu_types.values() for k in kinds)
    out += [
        row("Scalar Unit", counters("SCALAR_ALU_INSTRUCTION_0", "SCALAR_ALU_INSTRUCTION_1"), 2),
        row("Vector ALUs", counters(*(f"VECTOR_ALU_INSTRUCTION_{i}" for i in range(4))), 4),
        row("VPU Utilization", counters(*(f"VPU_VALU_{k}_OPS_{i}" for k in
                                          ("FADD", "FMUL", "MISC", "INT", "FMAC")
                                          for i in range(4))), 4),
        row("Vmem Stores", counters("VST_INSTRUCTION")),
        row("Vmem Loads", counters("VLD_INSTRUCTION_0", "VLD_INSTRUCTION_1"), 2),
        row("No MXU Busy", counters("MXU_BUSY_0"), unit="cycles"),
        row("1 MXU Busy", counters("MXU_BUSY_1"), unit="cycles"),
        row("2 MXU Busy", counters("MXU_BUSY_2"), unit="cycles"),
        row("Avg MXU Busy", counters("MXU_BUSY_1") + counters("MXU_BUSY_2", weight=2),
            unit="cycles", divisor=2),
        row("MXU0", mxu(0, every), unit="cycles"),
        row("MXU1", mxu(1, every), unit="cycles"),
        *(row(label, mxu(0, kinds) + mxu(1, kinds), _MXUS, "cycles")
          for label, kinds in spec.mxu_types.items()),
        row("MXU matpush", counters("MATPUSH_CYCLES_MXU_0", "MATPUSH_CYCLES_MXU_1"), _MXUS,
            "cycles"),
        row("No XLU Busy", counters("XLU_BUSY_0"), unit="cycles"),
        row("1 XLU Busy", counters("XLU_BUSY_1"), unit="cycles"),
        row("2 XLUs Busy", counters("XLU_BUSY_2"), unit="cycles"),
        row("Avg XLU Busy", counters("XLU_BUSY_1") + counters("XLU_BUSY_2", weight=2),
            unit="cycles", divisor=2),
    ]
    for x in (0, 1):
        out.append(Metric(f"XLU{x}", core, counters(
            f"PACKED_XLU_{x}", f"ROTATE_PERMUTE_INSTRUCTION_XLU_{x}",
            f"ROTATE_PERMUTE_SET_INSTRUCTION_XLU_{x}", f"TRANSPOSE_XLU_{x}"),
            ("div", cycles, spec.xlu_cpi), "instructions", cycles))
    return out + _hbm(spec, core) + _ici(spec)


def _hbm(spec: ChipSpec, core: int) -> list[Metric]:
    chip = spec.chip
    channels = [(s, c) for s in range(chip.hbm_stacks) for c in range(16)]
    read = tuple((chip.hbm(s, c, f"RD_RESP_PS{p}", core), _HBM_BYTES_PER_BEAT)
                 for s, c in channels for p in (0, 1))
    write = tuple((chip.hbm(s, c, f"{kind}_PS{p}", core), _HBM_BYTES_PER_BEAT)
                  for s, c in channels for p in (0, 1) for kind in ("WR_REQ", "PARTIAL_WRITE_REQ"))
    cycles = chip.tc("CYCLES", core)  # the TensorCore's own count, also on v7x
    total = f"HBM Rd+Wr - core {core}"
    return [Metric(total, 0, read + write, ("rate", cycles, spec.peak_hbm_bps, spec.frequency_hz),
                   "bytes", cycles),
            Metric("HBM Read Ratio", core, read, ("of", total), "percent", cycles,
                   share_of=total),
            Metric("HBM Write Ratio", core, write, ("of", total), "percent", cycles,
                   share_of=total)]


def _ici(spec: ChipSpec) -> list[Metric]:
    chip = spec.chip
    cycles = chip.pwr("CYCLE_COUNT") if spec.throttle else chip.tc("CYCLES")
    return [Metric(f"ICI ({label})", 0,
                   tuple((c, _ICI_BYTES_PER_FLIT) for c in chip.ici_insertions(direction)),
                   ("rate", cycles, _PEAK_ICI_BPS, 1e9), "bytes", cycles)
            for label, direction in (("Read", "RD"), ("Write", "WR"))]


def _sparse_core(spec: ChipSpec, die: int, core: int) -> list[Metric]:
    chip, node = spec.chip, (die << 1) + core
    tile0 = chip.tec(core, 0, "CYCLES", die)

    def tiles(name: str, ids) -> Metric:
        return Metric(name, node, tuple((i, 1) for i in ids), ("x", tile0, SC_TILES),
                      "instructions", None)

    def tec(name: str, counter: str) -> Metric:
        return tiles(name, (chip.tec(core, t, counter, die) for t in range(SC_TILES)))

    def vector(name: str, counter: str) -> Metric:
        return tiles(name, (chip.vector(core, t, counter, die) for t in range(SC_TILES)))

    def sequencer(name: str, counter: str) -> Metric:
        return Metric(name, node, ((chip.sequencer(core, counter, die), 1),),
                      ("x", chip.sequencer(core, "CYCLES", die), 1), "instructions", None)

    slots = ("V0", "V1", "V2", "VLD", "VST", "VEX", "VRES")
    return [
        tec("TEC Scalar Issue", "TEC_SCALAR_ISSUE"),
        tec("TEC Scalar Issue: S0 slot", "TEC_S0_INSTRUCTION"),
        tec("TEC Scalar Issue: S1 slot", "TEC_S1_INSTRUCTION"),
        tec("TEC Scalar Issue: Smisc slot", "TEC_SMISC_INSTRUCTION"),
        vector("SC Vector Issue", "VECTOR_ISSUE"),
        *(vector(name, f"{slot}_INSTRUCTION")
          for name, slot in zip(spec.vector_names, slots, strict=True)),
        sequencer("SCS Scalar Issue", "SCALAR_ISSUE"),
        sequencer("SCS: S0 Slot", "S0_INSTRUCTION"),
        sequencer("SCS: S1 Slot", "S1_INSTRUCTION"),
        sequencer("SCS: Smisc Slot", "SMISC_INSTRUCTION"),
    ]


def metrics(spec: ChipSpec, dies: int) -> list[Metric]:
    """Every metric of one sample of this chip, in XProf's order."""
    out = [m for core in range(spec.tensor_cores) for m in _tensor_core(spec, core)]
    return out + [m for die in range(dies) for core in (0, 1) for m in _sparse_core(spec, die, core)]


_V6E = ChipSpec(V6E, tensor_cores=1, frequency_hz=1.75e9, peak_hbm_bps=1525.5 * _GIB, xlu_cpi=4,
                mxu_types={"MXU BF16": ("LMR_BF16", "VREG_F8", "VREG_BF16", "VREG_F32"),
                           "MXU I8": ("LMR_I8", "VREG_I8"), "MXU I4": ("LMR_I4", "VREG_I4")},
                throttle=False,
                vector_names=("SC Vector Issue:V0 Slot", "SC Vector Issue: V1 Slot",
                              "SC Vector Issue: V2 Slot", "SC Vector Issue: VLD Slot",
                              "SC Vector Issue: VST Slot", "SC Vector Issue:VEX Slot",
                              "SC Vector Issue:VRES Slot"))  # XProf's spellings, spaces and all
_V7X = ChipSpec(V7X, tensor_cores=2, frequency_hz=1.9e9, peak_hbm_bps=3433.0 * _GIB, xlu_cpi=1,
                mxu_types={"MXU BF16": ("LMR_BF16", "VREG_BF16", "VREG_F32"),
                           "MXU E4M3 + E5M2": ("VREG_F8",)},
                throttle=True,
                vector_names=tuple(f"SC Vector Issue: {s} Slot" for s in
                                   ("V0", "V1", "V2", "VLD", "VST", "VEX", "VRES")))
CHIPS: dict[str, list[Metric]] = {"TPU v6 Lite": metrics(_V6E, dies=1),
                                  "TPU v7x": metrics(_V7X, dies=2)}
"""Each chip XProf reads (its `device_type_string`) and its metrics."""
