"""Utilization viewer (XProf's utilization_viewer): achieved against peak for each unit of a TPU
chip, from the performance counters the profile sampled.

As XProf reads them (xprof/convert/xplane_to_utilization_viewer.cc): every `/device:TPU:` plane
that states `device_id` and whose `device_type_string` is a supported chip; each line of it is
one sample (the line's id), whose events with `counter_value` (on the event or its metadata) set
the counter named by `performance_counter_id` (event, else metadata) to that value. A sample
gives, in this order: the TensorCore's units (scalar, vector ALUs, VPU, vector loads/stores, MXU
busy and per-MXU and per-type cycles, matpush, XLU busy and per XLU), HBM read+write bytes and
their read/write split, ICI read and write bytes, then each SparseCore's TEC, vector and
sequencer issue slots (tpu_generic_utilization_utils.cc). The TensorCore, HBM and ICI rows need
a non-zero cycle count; the SparseCore rows come for every sample with counters.

Each metric is a weighted sum of counters, so a chip's samples are one matrix (samples x
counters) and its metrics one product with a weight matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..profile.model import Profile
from . import tpu_counter_ids as ids
from .hosts import host_parts
from .steps import track_events

COLUMNS = ["host", "device", "sample", "node", "name", "achieved", "peak", "unit", "utilization"]
"""XProf's table (host .. unit) and `utilization` = achieved / peak (NaN where the peak is 0)."""
SUPPORTED = ("TPU v6 Lite",)
"""Chips whose counters we read. XProf also reads "TPU v7x" (its two dies, power-manager throttle
counters and four ICI routers); such a plane becomes a warning here."""
_XPROF_CHIPS = ("TPU v6 Lite", "TPU v7x")
_FREQUENCY_HZ = 1.75e9  # v6e TensorCore clock, as XProf takes it
_PEAK_HBM_BPS = 1525.5 * 1024**3
_PEAK_ICI_BPS = 294947368421.0526  # XProf's ICI peak, over cycles at 1 GHz
_HBM_BYTES_PER_BEAT, _ICI_BYTES_PER_FLIT = 32, 128
_MXUS, _XLU_CPI = 2, 4  # v6e: two MXUs a TensorCore, an XLU instruction every 4 cycles


@dataclass(frozen=True)
class _Metric:
    name: str
    node: int
    terms: tuple[tuple[int, int], ...]  # (counter id, weight): achieved = sum / divisor
    peak: tuple  # ("x", id, k): k * counter; ("div", id, k): counter // k;
    #              ("rate", id, bytes/s, hz): bytes/s * counter / hz; ("total",): the HBM bytes
    unit: str
    group: str  # tc, hbm, ratio, ici (need cycles; ratio needs HBM bytes), sc (always)
    divisor: int = 1


def _tc(*names: str, weight: int = 1) -> tuple[tuple[int, int], ...]:
    return tuple((ids.tc(n), weight) for n in names)


def _mxu_cycles(unit: int, kinds: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    cpi = {"LMR_BF16": 4, "VREG_F8": 8, "VREG_BF16": 8, "VREG_F32": 4, "LMR_I8": 2,
           "VREG_I8": 8, "LMR_I4": 2, "VREG_I4": 8}  # cycles per MXU instruction
    return tuple((ids.tc(f"MATMUL_{k}_MXU_{unit}"), cpi[k]) for k in kinds)


_BF16 = ("LMR_BF16", "VREG_F8", "VREG_BF16", "VREG_F32")
_I8, _I4 = ("LMR_I8", "VREG_I8"), ("LMR_I4", "VREG_I4")


def _v6e_metrics() -> list[_Metric]:
    """Every metric of a v6e sample, in XProf's order."""
    cyc = ids.tc("CYCLES")

    def tc(name, terms, k=1, unit="instructions", divisor=1):
        return _Metric(name, 0, terms, ("x", cyc, k), unit, "tc", divisor)

    out = [
        tc("Scalar Unit", _tc("SCALAR_ALU_INSTRUCTION_0", "SCALAR_ALU_INSTRUCTION_1"), 2),
        tc("Vector ALUs", _tc(*(f"VECTOR_ALU_INSTRUCTION_{i}" for i in range(4))), 4),
        tc("VPU Utilization", _tc(*(f"VPU_VALU_{k}_OPS_{i}" for k in
                                    ("FADD", "FMUL", "MISC", "INT", "FMAC") for i in range(4))), 4),
        tc("Vmem Stores", _tc("VST_INSTRUCTION")),
        tc("Vmem Loads", _tc("VLD_INSTRUCTION_0", "VLD_INSTRUCTION_1"), 2),
        tc("No MXU Busy", _tc("MXU_BUSY_0"), unit="cycles"),
        tc("1 MXU Busy", _tc("MXU_BUSY_1"), unit="cycles"),
        tc("2 MXU Busy", _tc("MXU_BUSY_2"), unit="cycles"),
        tc("Avg MXU Busy", _tc("MXU_BUSY_1") + _tc("MXU_BUSY_2", weight=2), unit="cycles",
           divisor=2),
        tc("MXU0", _mxu_cycles(0, _BF16 + _I8 + _I4), unit="cycles"),
        tc("MXU1", _mxu_cycles(1, _BF16 + _I8 + _I4), unit="cycles"),
        tc("MXU BF16", _mxu_cycles(0, _BF16) + _mxu_cycles(1, _BF16), _MXUS, "cycles"),
        tc("MXU I8", _mxu_cycles(0, _I8) + _mxu_cycles(1, _I8), _MXUS, "cycles"),
        tc("MXU I4", _mxu_cycles(0, _I4) + _mxu_cycles(1, _I4), _MXUS, "cycles"),
        tc("MXU matpush", _tc("MATPUSH_CYCLES_MXU_0", "MATPUSH_CYCLES_MXU_1"), _MXUS, "cycles"),
        tc("No XLU Busy", _tc("XLU_BUSY_0"), unit="cycles"),
        tc("1 XLU Busy", _tc("XLU_BUSY_1"), unit="cycles"),
        tc("2 XLUs Busy", _tc("XLU_BUSY_2"), unit="cycles"),
        tc("Avg XLU Busy", _tc("XLU_BUSY_1") + _tc("XLU_BUSY_2", weight=2), unit="cycles",
           divisor=2),
    ]
    for x in (0, 1):
        out.append(_Metric(f"XLU{x}", 0, _tc(f"PACKED_XLU_{x}", f"ROTATE_PERMUTE_INSTRUCTION_XLU_{x}",
                                             f"ROTATE_PERMUTE_SET_INSTRUCTION_XLU_{x}",
                                             f"TRANSPOSE_XLU_{x}"),
                           ("div", cyc, _XLU_CPI), "instructions", "tc"))
    hbm_rd = tuple((ids.hbm(s, c, f"RD_RESP_PS{p}"), _HBM_BYTES_PER_BEAT)
                   for s in range(ids.HBM_STACKS) for c in range(ids.HBM_CHANNELS) for p in (0, 1))
    hbm_wr = tuple((ids.hbm(s, c, f"{kind}_PS{p}"), _HBM_BYTES_PER_BEAT)
                   for s in range(ids.HBM_STACKS) for c in range(ids.HBM_CHANNELS) for p in (0, 1)
                   for kind in ("WR_REQ", "PARTIAL_WRITE_REQ"))
    out += [
        _Metric("HBM Rd+Wr - core 0", 0, hbm_rd + hbm_wr,
                ("rate", cyc, _PEAK_HBM_BPS, _FREQUENCY_HZ), "bytes", "hbm"),
        _Metric("HBM Read Ratio", 0, hbm_rd, ("total",), "percent", "ratio"),
        _Metric("HBM Write Ratio", 0, hbm_wr, ("total",), "percent", "ratio"),
        _Metric("ICI (Read)", 0, tuple((ids.ici(f"RD_{i}"), _ICI_BYTES_PER_FLIT) for i in (0, 1)),
                ("rate", cyc, _PEAK_ICI_BPS, 1e9), "bytes", "ici"),
        _Metric("ICI (Write)", 0, tuple((ids.ici(f"WR_{i}"), _ICI_BYTES_PER_FLIT) for i in (0, 1)),
                ("rate", cyc, _PEAK_ICI_BPS, 1e9), "bytes", "ici"),
    ]
    for core in (0, 1):
        out += _sparse_core(core)
    return out


def _sparse_core(core: int) -> list[_Metric]:
    tile0 = ids.sc_tile(core, 0, "CYCLES")
    scs_cycles = ids.scs(core, "CYCLES")

    def tiles(name: str, counter: str) -> _Metric:
        terms = tuple((ids.sc_tile(core, t, counter), 1) for t in range(ids.SC_TILES))
        return _Metric(name, core, terms, ("x", tile0, ids.SC_TILES), "instructions", "sc")

    def sequencer(name: str, counter: str) -> _Metric:
        return _Metric(name, core, ((ids.scs(core, counter), 1),), ("x", scs_cycles, 1),
                       "instructions", "sc")

    return [
        tiles("TEC Scalar Issue", "TEC_SCALAR_ISSUE"),
        tiles("TEC Scalar Issue: S0 slot", "TEC_S0_INSTRUCTION"),
        tiles("TEC Scalar Issue: S1 slot", "TEC_S1_INSTRUCTION"),
        tiles("TEC Scalar Issue: Smisc slot", "TEC_SMISC_INSTRUCTION"),
        tiles("SC Vector Issue", "VECTOR_ISSUE"),
        tiles("SC Vector Issue:V0 Slot", "V0_INSTRUCTION"),  # XProf's spellings, spaces and all
        tiles("SC Vector Issue: V1 Slot", "V1_INSTRUCTION"),
        tiles("SC Vector Issue: V2 Slot", "V2_INSTRUCTION"),
        tiles("SC Vector Issue: VLD Slot", "VLD_INSTRUCTION"),
        tiles("SC Vector Issue: VST Slot", "VST_INSTRUCTION"),
        tiles("SC Vector Issue:VEX Slot", "VEX_INSTRUCTION"),
        tiles("SC Vector Issue:VRES Slot", "VRES_INSTRUCTION"),
        sequencer("SCS Scalar Issue", "SCALAR_ISSUE"),
        sequencer("SCS: S0 Slot", "S0_INSTRUCTION"),
        sequencer("SCS: S1 Slot", "S1_INSTRUCTION"),
        sequencer("SCS: Smisc Slot", "SMISC_INSTRUCTION"),
    ]


_METRICS = _v6e_metrics()


def _evaluate(values: np.ndarray, column: dict[int, int]) -> tuple[np.ndarray, np.ndarray,
                                                                    np.ndarray]:
    """achieved, peak and whether XProf emits each (samples x metrics) from the counter matrix
    (samples x counters, uint64; `column` maps a counter id to its column)."""
    def col(counter: int) -> np.ndarray:
        at = column.get(counter)
        return values[:, at] if at is not None else np.zeros(values.shape[0], np.uint64)

    weights = np.zeros((values.shape[1], len(_METRICS)), np.uint64)
    for m, metric in enumerate(_METRICS):
        for counter, weight in metric.terms:
            if counter in column:
                weights[column[counter], m] += np.uint64(weight)
    sums = values @ weights  # uint64, wrapping as XProf's sums do
    divisor = np.array([m.divisor for m in _METRICS], np.float64)
    achieved = sums.astype(np.float64) / divisor
    hbm = next(m for m, metric in enumerate(_METRICS) if metric.name.startswith("HBM Rd+Wr"))
    peak = np.empty_like(achieved)
    for m, metric in enumerate(_METRICS):
        kind, *args = metric.peak
        if kind == "x":
            peak[:, m] = (col(args[0]) * np.uint64(args[1])).astype(np.float64)
        elif kind == "div":
            peak[:, m] = (col(args[0]) // np.uint64(args[1])).astype(np.float64)
        elif kind == "rate":
            peak[:, m] = args[1] * (col(args[0]).astype(np.float64) / args[2])
        else:
            peak[:, m] = sums[:, hbm].astype(np.float64)
    busy = col(ids.tc("CYCLES")) > 0
    group = np.array([metric.group for metric in _METRICS])
    emitted = np.ones_like(achieved, dtype=bool)
    emitted[:, group != "sc"] = busy[:, None]
    emitted[:, group == "ratio"] &= (sums[:, hbm] > 0)[:, None]
    return achieved, peak, emitted


def _stat_or_metadata(profile: Profile, events: np.ndarray, stat: str) -> tuple[np.ndarray,
                                                                                 np.ndarray]:
    """An integer stat from the event, else from its metadata: (present, uint64 values)."""
    present, bits = profile.stat_ints(events, stat)
    meta_stats = profile.metadata["stats"].to_numpy()
    rows, where = np.unique(profile.meta[events], return_inverse=True)
    per_row = [meta_stats[r].get(stat) for r in rows.tolist()]
    has = np.array([isinstance(v, int | float) for v in per_row], bool)
    value = np.array([int(v) & (2**64 - 1) if isinstance(v, int) else int(max(v, 0))
                      if isinstance(v, float) else 0 for v in per_row], np.uint64)
    where = where.reshape(-1)
    take = ~present & has[where]
    bits = bits.copy()
    bits[take] = value[where][take]
    return present | has[where], bits


def utilization_part(profile: Profile) -> pd.DataFrame:
    """One host's utilization rows (COLUMNS), plane by plane, sample by sample."""
    tracks = profile.built_tracks
    frames = []
    for section_id, row in profile.sections.iterrows():
        stats = row["stats"] or {}
        if not str(row["name"]).startswith("/device:TPU:") or "device_id" not in stats:
            continue
        chip = str(stats.get("device_type_string", ""))
        if chip not in _XPROF_CHIPS:
            continue
        if chip not in SUPPORTED:
            note = (f"{profile.source}: {row['name']} is a {chip}; the utilization viewer reads "
                    f"only {', '.join(SUPPORTED)} counters, so it is left out.")
            if note not in profile.warnings:
                profile.warnings.append(note)
            continue
        own = tracks[(tracks["section_id"] == section_id) & (tracks["kind"] != "hidden")]
        events = track_events(profile, own.index.to_numpy())
        has_value, value = _stat_or_metadata(profile, events, "counter_value")
        has_id, counter = _stat_or_metadata(profile, events, "performance_counter_id")
        keep = has_value & has_id & (counter != 0)
        if not keep.any():
            continue
        events, value, counter = events[keep], value[keep], counter[keep]
        line = own.loc[profile.track_of(events), "line_id"].to_numpy(np.int64)
        samples, sample_at = np.unique(line, return_inverse=True)  # by id (XProf: file order)
        counters, counter_at = np.unique(counter, return_inverse=True)
        matrix = np.zeros((samples.shape[0], counters.shape[0]), np.uint64)
        matrix[sample_at.reshape(-1), counter_at.reshape(-1)] = value  # a repeat: the last wins
        achieved, peak, emitted = _evaluate(matrix, {int(c): i for i, c in
                                                     enumerate(counters.tolist())})
        s, m = np.nonzero(emitted)
        frames.append(pd.DataFrame({
            "host": row["host"], "device": int(stats["device_id"]),
            "sample": samples[s], "node": np.array([_METRICS[i].node for i in m], np.int64),
            "name": [_METRICS[i].name for i in m], "achieved": achieved[s, m],
            "peak": peak[s, m], "unit": [_METRICS[i].unit for i in m]}))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["utilization"] = np.where(out["peak"] > 0, out["achieved"] / out["peak"], np.nan)
    return out


def analyze_utilization(profile: Profile) -> pd.DataFrame:
    """Every host's utilization rows (COLUMNS); computed once per profile."""
    def build() -> pd.DataFrame:
        parts = [p.part for p in host_parts(profile, utilization_part) if len(p.part)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    return profile.memo(("utilization_viewer",), build)


def utilization_viewer_available(profile: Profile) -> bool:
    """Whether a supported TPU chip sampled the counters the viewer reads."""
    return bool(len(analyze_utilization(profile)))
