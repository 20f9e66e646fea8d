"""`/device:GPU:N` planes (one line per CUDA stream) and the `/host:CUPTI` launch lines.

Every op of the program becomes one activity: a kernel on the compute stream, an NCCL kernel
for `all-reduce-start`, a device-to-host copy for `copy-start` (the `-done` ops run nothing).
A step also copies its batch in (`MemcpyH2D`) and its loss out (`MemcpyD2H`). Each activity is
launched from the host in order; a kernel starts no earlier than its launch returns plus
`LAUNCH_LATENCY_PS`, nor before the previous kernel ends. Launch and activity share a
`correlation_id`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .program import Program
from .timeline import EVAL_GAP_PS, LINE_START_NS, US, Steps, device_latency_ps, plan_devices
from .xspace import Plane, Stat

CLOCK_KHZ, SM_COUNT, MEMORY_BW = 1_980_000, 132, 3_350_000_000_000
PEAK_TFLOPS = 989.0
LAUNCH_LATENCY_PS = 3 * US
STREAMS = (
    ("Stream #12(Compute)", 12),
    ("Stream #13(MemcpyH2D)", 13),
    ("Stream #14(MemcpyD2H)", 14),
    ("Stream #15(Nccl)", 15),
)
COMPUTE, H2D, D2H, NCCL = range(4)
_GEMMS = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_kernel",
    "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x2x1_0_tnn_align8_warpspecialized",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_kernel",
)
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
_MAX_ACTIVITIES = 1 << 13


class _Activities:
    """A program's activities in launch order: name, stream, nominal time, HLO op."""

    def __init__(self, program: Program):
        ops = program.ops
        self.program = program
        self.rows = [("MemcpyH2D", H2D, 5 * US, None, "kind_src:pinned kind_dst:device size:65536")]
        done_at = {}
        for i, op in enumerate(ops):
            if op.opcode.endswith("-done"):
                done_at[op.async_peer] = i
        self.op_position = []
        for i, op in enumerate(ops):
            if op.opcode.endswith("-done"):
                continue
            if op.opcode == "all-reduce-start":
                row = (NCCL_KERNEL, NCCL, int(op.nbytes / 150e9 * 1e12), op, "")
            elif op.opcode == "copy-start":
                row = (
                    "MemcpyD2H",
                    D2H,
                    int(op.nbytes / 50e9 * 1e12),
                    op,
                    f"kind_src:device kind_dst:pinned size:{op.nbytes}",
                )
            elif op.category in ("convolution", "convolution fusion", "output fusion"):
                row = (_GEMMS[sum(op.dims) % len(_GEMMS)], COMPUTE, op.base_ps, op, "")
            else:
                row = (op.name.replace(".", "_"), COMPUTE, op.base_ps, op, "")
            self.rows.append(row)
            self.op_position.append(done_at.get(op.name, i))
        self.rows.append(("MemcpyD2H", D2H, 3 * US, None, "kind_src:device kind_dst:pinned size:4"))
        streams = np.array([r[1] for r in self.rows])
        self.stream = streams
        self.base = np.array([r[2] for r in self.rows], dtype=np.float64)
        self.compute = np.flatnonzero(streams == COMPUTE)
        self.side = np.array(
            [j for j in range(1, len(self.rows) - 1) if streams[j] != COMPUTE], dtype=np.int64
        )
        # For a side activity: the compute kernel before it, and the first one after its -done.
        positions = [-1] + self.op_position + [len(ops)]
        self.before = np.array(
            [self.compute[self.compute < j].max() for j in self.side], dtype=np.int64
        )
        after = []
        for j in self.side:
            later = [k for k in self.compute if positions[k] > positions[j]]
            after.append(later[0] if later else self.compute[-1])
        self.after = np.array(after, dtype=np.int64)

    def timeline(self, rows: int, rng: np.random.Generator):
        """Launch start/duration and activity start/duration (from the run start), and length."""
        n = len(self.rows)
        l_dur = rng.uniform(2.5, 5.0, (rows, n)) * US
        l_step = l_dur + rng.uniform(0.3, 1.0, (rows, n)) * US
        l_start = (2 * US + np.cumsum(l_step, axis=1) - l_step).astype(np.int64)
        l_end = l_start + l_dur.astype(np.int64)
        dur = (self.base[None, :] * rng.lognormal(0.0, 0.05, (rows, n))).astype(np.int64)
        start = np.zeros((rows, n), dtype=np.int64)
        start[:, 0] = l_end[:, 0] + LAUNCH_LATENCY_PS
        c = self.compute
        lower = l_end[:, c] + LAUNCH_LATENCY_PS
        lower[:, 0] = np.maximum(lower[:, 0], start[:, 0] + dur[:, 0])
        gap = (500_000 + rng.exponential(1 * US, (rows, len(c)))).astype(np.int64)
        step = dur[:, c] + gap
        offset = np.cumsum(step, axis=1) - step
        start[:, c] = offset + np.maximum.accumulate(lower - offset, axis=1)
        if len(self.side):
            s = np.maximum(
                start[:, self.before] + dur[:, self.before], l_end[:, self.side] + LAUNCH_LATENCY_PS
            )
            start[:, self.side] = s
            room = ((start[:, self.after] - s) * 0.9).astype(np.int64)
            dur[:, self.side] = np.clip(dur[:, self.side], 0, room)
        last = c[-1]
        start[:, -1] = (
            np.maximum(start[:, last] + dur[:, last], l_end[:, -1] + LAUNCH_LATENCY_PS) + US
        )
        return l_start, l_end - l_start, start, dur, start[:, -1] + dur[:, -1] + US


class GpuDevices:
    """The GPU planes of one host and its `/host:CUPTI` plane, filled chunk by chunk."""

    def __init__(self, n_devices: int, programs: list[Program], tmpdir: Path, first_plane_id: int):
        self.programs = programs
        self.activities = [_Activities(p) for p in programs]
        self.cupti = Plane(first_plane_id + n_devices, "/host:CUPTI", tmpdir)
        self.planes: list[Plane] = []
        self._lines, self._launch_lines, self._md, self._launch_md = [], [], [], []
        for d in range(n_devices):
            plane = Plane(first_plane_id + d, f"/device:GPU:{d}", tmpdir)
            plane.stats += [
                plane.stat("clock_rate", CLOCK_KHZ),
                plane.stat("core_count", SM_COUNT),
                plane.stat("memory_bandwidth", MEMORY_BW, "uint64"),
                plane.stat("compute_cap_major", 9),
                plane.stat("compute_cap_minor", 0),
                plane.stat("device_vendor", "Nvidia"),
            ]
            self._lines.append(
                [
                    plane.line(sid, name, LINE_START_NS + 10 + k)
                    for k, (name, sid) in enumerate(STREAMS)
                ]
            )
            self._md.append(
                [np.array([plane.event_id(r[0]) for r in acts.rows]) for acts in self.activities]
            )
            self.planes.append(plane)
            self._launch_lines.append(
                self.cupti.line(2001 + d, str(2001 + d), LINE_START_NS + 20 + d)
            )
        launch_name = {
            COMPUTE: "cuLaunchKernel",
            NCCL: "cuLaunchKernel",
            H2D: "cuMemcpyHtoDAsync_v2",
            D2H: "cuMemcpyDtoHAsync_v2",
        }
        self._launch_md = [
            np.array([self.cupti.event_id(launch_name[s]) for s in acts.stream])
            for acts in self.activities
        ]
        self._plan = None

    @property
    def all_planes(self) -> list[Plane]:
        return [*self.planes, self.cupti]

    def event_count(self, steps: int, evals: int) -> int:
        """Activities and their launches, on every device."""
        per = [2 * len(a.rows) for a in self.activities]
        return len(self.planes) * (steps * per[0] + evals * per[1])

    @property
    def nominal_ps(self) -> float:
        return float(self.activities[0].base.sum())

    def plan(self, index: np.ndarray, evals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self._plan, busy = plan_devices(len(self.planes), evals, 4, lambda: (
            self.activities[0].timeline(len(index), rng),
            self.activities[1].timeline(int(evals.sum()), rng)))
        return busy

    def write(self, steps: Steps) -> None:
        evals = steps.eval
        for d, plane in enumerate(self.planes):
            t0 = steps.launch + device_latency_ps(d)
            train, evaluation = self._plan[d]
            runs = [
                (0, steps.index, t0, train),
                (1, steps.index[evals], t0[evals] + train[4][evals] + EVAL_GAP_PS, evaluation),
            ]
            self._write_runs(d, plane, runs)

    def _write_runs(self, d: int, plane: Plane, runs) -> None:
        per_stream = [[] for _ in STREAMS]
        launches = []
        for slot, index, t0, (l_start, l_dur, start, dur, _) in runs:
            acts = self.activities[slot]
            rows, n = start.shape
            corr = (
                (((index * 2 + slot) * len(self.planes) + d) * _MAX_ACTIVITIES)[:, None]
                + 1
                + np.arange(n)
            )
            launches.append(
                (
                    np.broadcast_to(self._launch_md[slot], (rows, n)).ravel(),
                    (t0[:, None] + l_start).ravel(),
                    l_dur.ravel(),
                    corr.ravel(),
                )
            )
            for k in range(len(STREAMS)):
                cols = np.flatnonzero(acts.stream == k)
                per_stream[k].append(
                    (
                        slot,
                        cols,
                        np.broadcast_to(self._md[d][slot][cols], (rows, len(cols))).ravel(),
                        (t0[:, None] + start[:, cols]).ravel(),
                        dur[:, cols].ravel(),
                        corr[:, cols].ravel(),
                        rows,
                    )
                )
        sid = plane.stat_id
        for k, chunks in enumerate(per_stream):
            md, start, dur, corr, details, hlo_op, module, has_op = [], [], [], [], [], [], [], []
            for slot, cols, m, s, du, c, rows in chunks:
                acts = self.activities[slot]
                md.append(m)
                start.append(s)
                dur.append(du)
                corr.append(c)
                row_details, row_op, row_module, row_has = [], [], [], []
                for j in cols:
                    op, memcpy = acts.rows[j][3:]
                    row_details.append(sid(memcpy or _kernel_details(op)))
                    row_op.append(sid(op.name) if op else 0)
                    row_module.append(sid(acts.program.name) if op else 0)
                    row_has.append(op is not None)
                for out, values in (
                    (details, row_details),
                    (hlo_op, row_op),
                    (module, row_module),
                    (has_op, row_has),
                ):
                    out.append(
                        np.tile(
                            np.array(values, dtype=np.int64 if out is not has_op else bool), rows
                        )
                    )
            cat = np.concatenate
            present = cat(has_op)
            self._lines[d][k].add(
                cat(md),
                cat(start),
                cat(dur),
                [
                    Stat(sid("correlation_id"), cat(corr), "uint64"),
                    Stat(
                        sid("memcpy_details" if k in (H2D, D2H) else "kernel_details"),
                        cat(details),
                        "ref",
                    ),
                    Stat(sid("hlo_op"), cat(hlo_op), "ref", present=present),
                    Stat(sid("hlo_module"), cat(module), "ref", present=present),
                ],
            )
        md, start, dur, corr = (np.concatenate(c) for c in zip(*launches))
        self._launch_lines[d].add(
            md, start, dur, [Stat(self.cupti.stat_id("correlation_id"), corr, "uint64")]
        )


def _kernel_details(op) -> str:
    """CUPTI's launch configuration string; fixed per op so it can be a ref value."""
    threads = 128 if op.opcode == "fusion" and op.fusion_kind == "kLoop" else 256
    grid = max(1, min(op.elements // (threads * 8), 65535)) if op.dims else 1
    regs = 32 + 8 * (len(op.name) % 12)
    return (
        f"regs:{regs} static_shared:0 dynamic_shared:{0 if threads == 128 else 98304} "
        f"grid:{grid},1,1 block:{threads},1,1 occ_pct:{50.0 if threads == 256 else 100.0}"
    )
