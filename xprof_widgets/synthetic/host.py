"""The `/host:CPU` plane: the Python thread's steps, an input pipeline thread, a PjRt thread.

Per step the `python` line nests: `train` (stats `step_num`, `_r`=1) > `Iterator::Prefetch`
(the host waiting for the next batch: long on input-bound steps), `PjitFunction(train_step)` > `ParseArguments`, `...Execute`,
then `BlockHostUntilReady`. A `tf_data_private_threadpool` line produces each batch
(`Iterator::Prefetch::ParallelMapV2` > `...::TFRecord`). On TPU a `pjrt-tpu-tasks` line holds
one `DoEnqueueProgram` per device and program (`_pt`=12, `_p` = the device module's `_c`).
"""

from __future__ import annotations

import numpy as np

from .allocator import Allocators
from .timeline import LINE_START_NS, US, Steps, host_flow_id
from .xspace import Plane, Stat

HTML_EVENT_NAME = "<img src=x onerror=alert(1)>"
_EXECUTE = {
    "tpu": "TfrtTpuLoadedExecutable::Execute",
    "gpu": "PjRtStreamExecutorLoadedExecutable::Execute",
}


class HostThreads:
    def __init__(
        self, plane: Plane, kind: str, n_devices: int, program_names: list[str], html_event: bool,
        allocator: bool = False,
    ):
        self.plane, self.kind, self.n_devices, self.html_event = plane, kind, n_devices, html_event
        self.allocators = Allocators(plane, kind, n_devices, program_names[0]) if allocator else None
        self.python = plane.line(1001, "python", LINE_START_NS)
        self.tf_data = plane.line(1003, "tf_data_private_threadpool/1003", LINE_START_NS + 1)
        self.pjrt = (
            plane.line(1005, "pjrt-tpu-tasks/1005", LINE_START_NS + 2) if kind == "tpu" else None
        )
        md = plane.event_id
        self._md = {
            name: md(name)
            for name in (
                "train",
                "Iterator::Prefetch",
                "ParseArguments",
                _EXECUTE[kind],
                "BlockHostUntilReady",
                "Iterator::Prefetch::ParallelMapV2",
                "Iterator::Prefetch::ParallelMapV2::TFRecord",
                "DoEnqueueProgram",
            )
        }
        self._pjit = [md(f"PjitFunction({name.removeprefix('jit_')})") for name in program_names]
        self._last_input_end = None

    def event_count(self, steps: int, evals: int) -> int:
        enqueues = self.n_devices * (steps + evals) if self.pjrt else 0
        allocations = Allocators.event_count(steps, self.n_devices) if self.allocators else 0
        return 8 * steps + 3 * evals + enqueues + allocations + int(self.html_event)

    def write(self, steps: Steps) -> None:
        evals = steps.eval
        ds, disp = steps.dispatch_start, steps.dispatch
        train_disp = (disp * np.where(evals, 0.6, 0.95)).astype(np.int64)
        eval_start = ds[evals] + (disp[evals] * 0.65).astype(np.int64)
        eval_disp = (disp[evals] * 0.3).astype(np.int64)
        m = self._md
        block_start = steps.launch + 2 * US
        rows = [  # (metadata ids, start, duration)
            (m["train"], steps.start, steps.end - steps.start - 2 * US),
            (m["Iterator::Prefetch"], steps.input_start, steps.input),
            (self._pjit[0], ds, train_disp),
            (m["ParseArguments"], ds + US, (train_disp * 0.15).astype(np.int64)),
            (
                m[_EXECUTE[self.kind]],
                ds + (train_disp * 0.2).astype(np.int64),
                (train_disp * 0.75).astype(np.int64),
            ),
            (m["BlockHostUntilReady"], block_start, steps.end - 5 * US - block_start),
            (self._pjit[1], eval_start, eval_disp),
            (m["ParseArguments"], eval_start + US, (eval_disp * 0.15).astype(np.int64)),
            (
                m[_EXECUTE[self.kind]],
                eval_start + (eval_disp * 0.2).astype(np.int64),
                (eval_disp * 0.75).astype(np.int64),
            ),
        ]
        if self.html_event and steps.index[0] == 0:
            rows.append((self.plane.event_id(HTML_EVENT_NAME), ds[:1] - 4 * US, np.array([2 * US])))
        md, start, dur = _columns(rows)
        is_train = md == m["train"]
        stats = [
            Stat(self.plane.stat_id("step_num"), _fill(is_train, steps.index), present=is_train),
            Stat(self.plane.stat_id("_r"), np.ones(len(md), dtype=np.int64), present=is_train),
        ]
        if self.allocators is not None:
            md, start, dur, stats = self.allocators.merge(steps, md, start, dur, stats)
        self.python.add(md, start, dur, stats)
        self._write_input(steps)
        if self.pjrt is not None:
            self._write_enqueues(steps, ds, train_disp, eval_start, eval_disp)

    def _write_input(self, steps: Steps) -> None:
        end = steps.input_start + steps.input
        previous = np.concatenate([[self._last_input_end or steps.start[0] - 500 * US], end[:-1]])
        self._last_input_end = int(end[-1])
        prep = ((end - previous) * 0.8).astype(np.int64)
        m = self._md
        md, start, dur = _columns(
            [
                (m["Iterator::Prefetch::ParallelMapV2"], end - prep, prep - US),
                (
                    m["Iterator::Prefetch::ParallelMapV2::TFRecord"],
                    end - prep + US,
                    (prep * 0.4).astype(np.int64),
                ),
            ]
        )
        self.tf_data.add(md, start, dur)

    def _write_enqueues(self, steps, ds, train_disp, eval_start, eval_disp) -> None:
        rows, stats = [], []
        for slot, index, t0, span in (
            (
                0,
                steps.index,
                ds + (train_disp * 0.3).astype(np.int64),
                (train_disp * 0.6).astype(np.int64),
            ),
            (1, steps.index[steps.eval], eval_start, eval_disp),
        ):
            width = span // self.n_devices
            for d in range(self.n_devices):
                rows.append(
                    (self._md["DoEnqueueProgram"], t0 + d * width, (width * 0.8).astype(np.int64))
                )
                stats.append(
                    (host_flow_id(index, slot, d), index * 2 + slot, np.full(len(index), d))
                )
        md, start, dur = _columns(rows)
        flow, run, device = (np.concatenate(c) for c in zip(*stats))
        sid = self.plane.stat_id
        self.pjrt.add(
            md,
            start,
            dur,
            [
                Stat(sid("_pt"), np.full(len(md), 12)),
                Stat(sid("_p"), flow),
                Stat(sid("run_id"), run, "uint64"),
                Stat(sid("device_ordinal"), device),
            ],
        )


def _fill(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(mask), dtype=np.int64)
    out[mask] = values
    return out


def _columns(rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts = [np.asarray(s, dtype=np.int64) for _, s, _ in rows]
    md = np.concatenate([np.full(len(s), m) for (m, _, _), s in zip(rows, starts)])
    dur = np.concatenate(
        [
            np.broadcast_to(np.asarray(d, dtype=np.int64), s.shape)
            for (_, _, d), s in zip(rows, starts)
        ]
    )
    return md, np.concatenate(starts), dur
