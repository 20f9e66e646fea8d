"""`/device:TPU:N` planes: Steps, XLA Modules, XLA Ops, Async XLA Ops and XLA TraceMe lines.

Like real TPU profiles, device lines have timestamp_ns = 0 and absolute offsets; op stats sit
on the op's metadata (one metadata entry per HLO instruction, its name the HLO text).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import llo
from .program import Program
from .timeline import (
    EVAL_GAP_PS,
    US,
    Steps,
    async_flow,
    device_latency_ps,
    host_flow_id,
    plan_devices,
)
from .xspace import Plane, Stat

PEAK_TFLOPS, PEAK_HBM_GBPS = 918.0, 1638.4
DEVICE_TYPE = "TPU v6 Lite"
TRACEME_PS = (800_000, 100_000)  # barrier-cores, dependency-wait at each module's start
OPS_LEAD_PS = 1_500_000
MODULE_TAIL_PS = 400_000


def op_timeline(base_ps: np.ndarray, rows: int, rng: np.random.Generator):
    """Start (from the module start), duration and module length of `rows` executions."""
    dur = (base_ps[None, :] * rng.lognormal(0.0, 0.05, (rows, len(base_ps)))).astype(np.int64)
    gap = (30_000 + rng.exponential(150_000, (rows, len(base_ps)))).astype(np.int64)
    stall = rng.random((rows, len(base_ps))) < 0.005
    gap[stall] += rng.uniform(2, 15, int(stall.sum())).astype(np.int64) * US
    step = dur + gap
    start = OPS_LEAD_PS + np.cumsum(step, axis=1) - step
    return start, dur, start[:, -1] + dur[:, -1] + MODULE_TAIL_PS


def async_pairs(program: Program) -> list[tuple[int, int]]:
    """(start, done) positions in the program's op list of each async pair."""
    pos = {op.name: i for i, op in enumerate(program.ops)}
    return [
        (pos[op.name], pos[op.async_peer]) for op in program.ops if op.opcode.endswith("-start")
    ]


def op_metadata_stats(plane: Plane, program: Program, op, symbol_id: int) -> list:
    """Per-op stats as TPU profiles carry them; XProf's op profile skips ops without symbol_id."""
    stats = [
        plane.stat("hlo_category", op.category),
        plane.stat("flops", op.flops),
        plane.stat("bytes_accessed", op.bytes_accessed),
        plane.stat("program_id", program.program_id, "uint64"),
        plane.stat("symbol_id", symbol_id, "uint64"),
    ]
    if op.opcode == "convolution" or op.category == "convolution fusion":
        stats.append(plane.stat("model_flops", op.flops))
    if op.tf_op:
        stats += [plane.stat("tf_op", op.tf_op), plane.stat("source", op.source)]
    return stats


class TpuDevices:
    """The device planes of one host, filled chunk by chunk."""

    def __init__(self, n_devices: int, programs: list[Program], tmpdir: Path, first_plane_id: int,
                 custom_calls: bool = False):
        self.programs = programs  # slot 0 train, slot 1 eval
        # the train program's custom calls, traced in its first steps (llo.py)
        self.custom_calls = [i for i, op in enumerate(programs[0].ops)
                             if op.opcode == "custom-call"] if custom_calls else []
        self.pairs = [async_pairs(p) for p in programs]
        self.done_names = sorted(
            {op.name for p in programs for op in p.ops if op.opcode.endswith("-done")}
        )
        self._done_code = {name: i for i, name in enumerate(self.done_names)}
        self.planes: list[Plane] = []
        self._meta = []
        for d in range(n_devices):
            plane = Plane(first_plane_id + d, f"/device:TPU:{d}", tmpdir)
            plane.stats += [
                plane.stat("device_type_string", DEVICE_TYPE),
                plane.stat("peak_teraflops_per_second", PEAK_TFLOPS),
                plane.stat("peak_hbm_bw_gigabytes_per_second", PEAK_HBM_GBPS),
            ]
            lines = {
                name: plane.line(i + 1, name)
                for i, name in enumerate(
                    ("Steps", "XLA Modules", "XLA Ops", "Async XLA Ops", "XLA TraceMe")
                )
            }
            meta = {
                "lines": lines,
                "ops": [],
                "async": [],
                "module": [],
                "traceme": [plane.event_id("barrier-cores"), plane.event_id("dependency-wait")],
            }
            for program, pairs in zip(programs, self.pairs):
                meta["module"].append(plane.event_id(program.display))
                meta["ops"].append(
                    np.array(
                        [
                            plane.event_id(
                                program.hlo_text(op), op.name,
                                op_metadata_stats(plane, program, op, symbol_id),
                            )
                            for symbol_id, op in enumerate(program.ops, start=1)
                        ]
                    )
                )
                ops = program.ops
                meta["async"].append(
                    np.array(
                        [
                            plane.event_id(
                                program.hlo_text(ops[a]),
                                "async-copy" if ops[a].opcode == "copy-start" else ops[a].category,
                            )
                            for a, _ in pairs
                        ],
                        dtype=np.int64,
                    )
                )
            self.planes.append(plane)
            self._meta.append(meta)
        self._llo = [llo.LloTracer(p, d) for d, p in enumerate(self.planes)] \
            if custom_calls else []
        self._plan = None

    def event_count(self, steps: int, evals: int) -> int:
        """A step event per step; per program run a module, two TraceMes, ops, async ops."""
        per = [3 + len(p.ops) + len(pairs) for p, pairs in zip(self.programs, self.pairs)]
        traced = (min(steps, llo.LLO_STEPS) * len(self.custom_calls) * llo.events_per_run()
                  + len(llo.COUNTERS)) if self._llo else 0
        return len(self.planes) * (steps * (1 + per[0]) + evals * per[1] + traced)

    @property
    def nominal_ps(self) -> float:
        return float(sum(op.base_ps for op in self.programs[0].ops))

    def plan(self, index: np.ndarray, evals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draws every device's op timings for these steps; returns the busy time after launch."""
        train_ps, eval_ps = ([op.base_ps for op in p.ops] for p in self.programs[:2])
        self._plan, busy = plan_devices(len(self.planes), evals, 2, lambda: (
            op_timeline(np.array(train_ps), len(index), rng),
            op_timeline(np.array(eval_ps), int(evals.sum()), rng)))
        return busy

    def write(self, steps: Steps) -> None:
        evals = steps.eval
        for d, (plane, meta) in enumerate(zip(self.planes, self._meta)):
            lines = meta["lines"]
            t0 = steps.launch + device_latency_ps(d)
            train, evaluation = self._plan[d]
            step_md = [plane.event_id(str(k)) for k in steps.index]
            lines["Steps"].add(
                step_md,
                steps.start + device_latency_ps(d),
                steps.end - steps.start,
                [
                    Stat(plane.stat_id("step_num"), steps.index),
                    Stat(plane.stat_id("group_id"), steps.index),
                ],
            )
            eval_t0 = t0[evals] + train[2][evals] + EVAL_GAP_PS
            runs = [(0, steps.index, t0, train), (1, steps.index[evals], eval_t0, evaluation)]
            self._write_modules(plane, meta, runs, d)

    def finish(self, end_ps: int) -> None:
        """The performance counters' one sample, at the end of the profile."""
        for tracer in self._llo:
            tracer.write_counters(end_ps)

    def _write_modules(self, plane: Plane, meta: dict, runs: list, device: int) -> None:
        lines = meta["lines"]
        mod_md, mod_start, mod_dur, mod_step, mod_slot = [], [], [], [], []
        ops_md, ops_start, ops_dur, ops_flow, ops_has_flow = [], [], [], [], []
        as_md, as_start, as_dur, as_flow, as_done = [], [], [], [], []
        for slot, index, t0, (start, dur, length) in runs:
            rows, n = start.shape
            mod_md.append(np.full(rows, meta["module"][slot]))
            mod_start.append(t0)
            mod_dur.append(length)
            mod_step.append(index)
            mod_slot.append(np.full(rows, slot))
            abs_start = t0[:, None] + start
            if slot == 0 and self._llo:
                traced = index < llo.LLO_STEPS
                self._llo[device].write(abs_start[traced][:, self.custom_calls].ravel(),
                                        dur[traced][:, self.custom_calls].ravel())
            ops_md.append(np.broadcast_to(meta["ops"][slot], (rows, n)).ravel())
            ops_start.append(abs_start.ravel())
            ops_dur.append(dur.ravel())
            flow = np.zeros((rows, n), dtype=np.uint64)
            has_flow = np.zeros((rows, n), dtype=bool)
            for p, (a, b) in enumerate(self.pairs[slot]):
                fid = (np.int64(1) << 44) + ((index * 2 + slot) * 128 + p) * 256 + device
                flow[:, a], flow[:, b] = async_flow(fid, 2), async_flow(fid, 1)
                has_flow[:, [a, b]] = True
                as_md.append(np.full(rows, meta["async"][slot][p]))
                as_start.append(abs_start[:, a] + dur[:, a])
                as_dur.append(abs_start[:, b] - abs_start[:, a] - dur[:, a])
                as_flow.append(async_flow(fid, 3))
                as_done.append(np.full(rows, self._done_code[self.programs[slot].ops[b].name]))
            ops_flow.append(flow.ravel())
            ops_has_flow.append(has_flow.ravel())
        cat = np.concatenate
        md, start = cat(mod_md), cat(mod_start)
        steps_, slots = cat(mod_step), cat(mod_slot)
        lines["XLA Modules"].add(
            md,
            start,
            cat(mod_dur),
            [
                Stat(plane.stat_id("run_id"), steps_ * 2 + slots, "uint64"),
                Stat(plane.stat_id("_ct"), np.full(len(md), 12)),
                Stat(plane.stat_id("_c"), host_flow_id(steps_, slots, device)),
            ],
        )
        tm = meta["traceme"]
        lines["XLA TraceMe"].add(
            np.concatenate([np.full(len(md), tm[0]), np.full(len(md), tm[1])]),
            np.concatenate([start, start + TRACEME_PS[0] + 100_000]),
            np.concatenate([np.full(len(md), TRACEME_PS[0]), np.full(len(md), TRACEME_PS[1])]),
        )
        flows = cat(ops_has_flow)
        lines["XLA Ops"].add(
            cat(ops_md),
            cat(ops_start),
            cat(ops_dur),
            [Stat(plane.stat_id("flow"), cat(ops_flow), "uint64", present=flows)],
        )
        if as_md:
            lines["Async XLA Ops"].add(
                cat(as_md),
                cat(as_start),
                cat(as_dur),
                [
                    Stat(plane.stat_id("hlo_op"), cat(as_done), "str", self.done_names),
                    Stat(plane.stat_id("_a"), np.ones(sum(len(x) for x in as_md), dtype=np.int64)),
                    Stat(plane.stat_id("flow"), cat(as_flow), "uint64"),
                ],
            )
