"""Custom-call (Pallas / Mosaic) tracing on TPU cores, as `--xla_xprof_enable_custom_call_tracing`
writes it, and the chip's performance counters.

During the first LLO_STEPS steps, each run of a custom-call op gets, in the op's window:
- `LLO Utilization`: per execution unit (Scalar ALU, Vector ALU, ..., MXU) a utilization sample
  every 1/UTILIZATION_SAMPLES of the window, as a counter (stat `util %`);
- `Pallas Primitives`: the kernel's primitives one after another (stats `pallas_primitive`,
  `source_info`);
- `LLO Instructions`: the bundles (stats `bundle_number`, `instruction_ordinal`, `llo_scopes`,
  `details` = the instruction text, `source_info`);
- `SALU/VALU/EUP/XLU/VLD/VST Instructions`, `MXU0 Instructions`: each unit's instructions
  (stats `unit_id`, `bundle_number`, `details`);
the line names and stats XProf's LLO parser reads (cli/internal/oss/llo_parser.py). At the end a
`Performance Counters` line holds one sample of the chip's counters: events named by counter
with `counter_value`, `performance_counter_description` and `performance_counter_sets`; the plane
states its `global_chip_id`. XProf's perf counters tool reads these.
"""

from __future__ import annotations

import numpy as np

from .xspace import Plane, Stat

LLO_STEPS = 2
UTILIZATION_SAMPLES = 8
UNITS = ("Scalar ALU", "Vector ALU", "Vector EUP", "Vector Load", "Vector Store", "XLU", "MXU")
PRIMITIVES = ("load", "dot_general", "exp", "swap")
BUNDLES = 16
UNIT_LINES = ("SALU", "VALU", "EUP", "XLU", "VLD", "VST", "MXU0")
UNIT_OPS = {"SALU": "sadd.s32", "VALU": "vmax.f32", "EUP": "vexp.f32", "XLU": "vxpose.b16",
            "VLD": "vld", "VST": "vst", "MXU0": "vmatmul.bf16"}
PER_UNIT = 4
SCOPES = ("softmax/row_max", "softmax/exp", "softmax/row_sum", "softmax/normalize")
COUNTERS = (  # name, set, description
    ("tc_issue_cycles", "issue", "Cycles the TensorCore issued a bundle"),
    ("tc_stall_cycles", "issue", "Cycles the TensorCore issued nothing"),
    ("mxu_busy_cycles", "mxu", "Cycles a matrix unit was busy"),
    ("vpu_busy_cycles", "vpu", "Cycles the vector unit was busy"),
    ("hbm_read_bytes", "hbm", "Bytes read from HBM"),
    ("hbm_write_bytes", "hbm", "Bytes written to HBM"),
    ("ici_tx_bytes", "ici", "Bytes sent over the inter-chip links"),
)
COUNTER_LINE_ID = 900


def events_per_run() -> int:
    return (len(UNITS) * UTILIZATION_SAMPLES + len(PRIMITIVES) + BUNDLES
            + len(UNIT_LINES) * PER_UNIT)


class LloTracer:
    """The custom-call lines of one TPU core's plane."""

    def __init__(self, plane: Plane, chip: int):
        self.plane, self.chip = plane, chip
        plane.stats.append(plane.stat("global_chip_id", chip))
        names = ["LLO Utilization", "Pallas Primitives", "LLO Instructions",
                 *(f"{u} Instructions" for u in UNIT_LINES)]
        self.lines = {name: plane.line(800 + k, name) for k, name in enumerate(names)}
        self.counter_line = plane.line(COUNTER_LINE_ID, "Performance Counters")
        self.runs = 0
        self.cycles = 0

    def write(self, start: np.ndarray, duration: np.ndarray) -> None:
        """One run of the kernel per (start, duration) window, in time order (ps)."""
        if not start.shape[0]:
            return
        sid, md = self.plane.stat_id, self.plane.event_id
        runs = np.arange(start.shape[0]) + self.runs
        self.runs += start.shape[0]
        self.cycles += int(duration.sum() // 1000)  # ~1 GHz: a cycle per ns
        k = np.arange(UTILIZATION_SAMPLES)
        at = (start[:, None] + duration[:, None] * k / UTILIZATION_SAMPLES).astype(np.int64)
        unit_md = np.array([md(u) for u in UNITS])
        phase = runs[:, None, None] + np.arange(len(UNITS))[None, :, None] + k[None, None, :]
        util = np.round(15 + 70 * np.abs(np.sin(0.7 * phase)), 2)
        shape = util.shape  # (run, unit, sample); the line orders them by time
        self.lines["LLO Utilization"].add(
            np.broadcast_to(unit_md[None, :, None], shape).ravel(),
            np.broadcast_to(at[:, None, :], shape).ravel(), np.zeros(util.size, np.int64),
            [Stat(sid("util %"), util.ravel(), "double")])
        self._pieces("Pallas Primitives", start, duration, PRIMITIVES, lambda j: [
            Stat(sid("pallas_primitive"), j, "str", PRIMITIVES),
            Stat(sid("source_info"), j, "str", [f"kernels/softmax.py:{40 + 3 * i}"
                                                 for i in range(len(PRIMITIVES))])])
        bundles = [f"bundle {b}" for b in range(BUNDLES)]
        self._pieces("LLO Instructions", start, duration, bundles, lambda j: [
            Stat(sid("bundle_number"), j), Stat(sid("instruction_ordinal"), 3 * j),
            Stat(sid("llo_scopes"), j * len(SCOPES) // BUNDLES, "str", SCOPES),
            Stat(sid("details"), j % len(UNIT_LINES), "str",
                 [f"{UNIT_OPS[u]} v{2 * i}, v{2 * i + 1}" for i, u in enumerate(UNIT_LINES)]),
            Stat(sid("source_info"), j * len(PRIMITIVES) // BUNDLES, "str",
                 [f"kernels/softmax.py:{40 + 3 * i}" for i in range(len(PRIMITIVES))])])
        for unit_id, unit in enumerate(UNIT_LINES):
            offset = (unit_id + 0.5) / (len(UNIT_LINES) + 1) / PER_UNIT
            self._pieces(f"{unit} Instructions", start, duration, [UNIT_OPS[unit]] * PER_UNIT,
                         lambda j, u=unit_id, n=unit: [
                             Stat(sid("unit_id"), np.full(j.shape[0], u)),
                             Stat(sid("bundle_number"), j * BUNDLES // PER_UNIT + u % 2),
                             Stat(sid("details"), np.zeros(j.shape[0], np.int64), "str",
                                  [f"{UNIT_OPS[n]} v{2 * u}, v{2 * u + 1}"])],
                         offset=offset, width=0.6 / PER_UNIT)

    def _pieces(self, line: str, start: np.ndarray, duration: np.ndarray, names: list,
                stats, offset: float = 0.0, width: float | None = None) -> None:
        """len(names) events per window, side by side (`width` of a slot each, from `offset`)."""
        n = len(names)
        j = np.tile(np.arange(n), start.shape[0])
        slot = np.repeat(duration // n, n)
        at = np.repeat(start, n) + j * slot + (slot * offset).astype(np.int64)
        dur = (slot * (width * n if width is not None else 0.95)).astype(np.int64)
        md = np.array([self.plane.event_id(name) for name in names])[j]
        self.lines[line].add(md, at, np.maximum(dur, 1), stats(j))

    def write_counters(self, at_ps: int) -> None:
        """The one counter sample, at the end of the profile."""
        sid = self.plane.stat_id
        n = len(COUNTERS)
        issue = self.cycles
        values = np.array([int(issue * 0.8), int(issue * 0.2), int(issue * 0.45),
                           int(issue * 0.6), issue * 96, issue * 40, issue * 8 * (self.chip + 1)],
                          np.uint64)
        self.counter_line.add(
            np.array([self.plane.event_id(name) for name, _, _ in COUNTERS]),
            np.full(n, at_ps, np.int64), np.zeros(n, np.int64),
            [Stat(sid("counter_value"), values, "uint64"),
             Stat(sid("performance_counter_description"), np.arange(n), "str",
                  [d for _, _, d in COUNTERS]),
             Stat(sid("performance_counter_sets"), np.arange(n), "str",
                  [s for _, s, _ in COUNTERS])])
