"""Allocator bookkeeping on the host's `python` line: `MemoryAllocation` / `MemoryDeallocation`.

The events carry the stats TensorFlow's allocators write (xprof's memory_profile reads them):
`bytes_reserved` (stack), `bytes_allocated` (heap), `bytes_available`, `fragmentation`,
`peak_bytes_in_use`, `requested_bytes`, `allocation_bytes`, `addr`, and on allocations `tf_op`,
`region_type`, `data_type` (TensorFlow's DataType enum) and `shape`, every number an int64 as
TensorFlow writes them (XProf reads a uint64 `addr` as 0). A deallocation names only
its address and sizes, as TensorFlow's does. One allocator per device: `allocator_name`
`GPU_<d>_bfc` on GPU, `index_on_host` <d> on TPU (whose runtime also reserves a stack).

Per step and device: the weights are allocated in the first step and kept; `ACTIVATIONS`
forward activations are allocated while the step is dispatched and freed, last first, while the
host waits for the device; `TEMPS` scratch buffers live briefly in between. Every event lies
inside its step's `train` event, so step grouping ties it to the step. Addresses are reused
from step to step, as a BFC allocator's bins are.
"""

from __future__ import annotations

import numpy as np

from .timeline import US, Steps
from .xspace import Plane, Stat

ACTIVATIONS, TEMPS, WEIGHTS = 16, 4, 3
MIB, GIB = 1 << 20, 1 << 30
_LIMIT = {"gpu": 16 * GIB, "tpu": 32 * GIB}
_STACK = {"gpu": 0, "tpu": GIB}
_FLOAT, _BFLOAT16 = 1, 14  # TensorFlow DataType codes
_BYTES = {_FLOAT: 4, _BFLOAT16: 2}
_ROWS = 256
_OUTPUT, _TEMP, _PERSIST = 0, 1, 2
_REGIONS = ("output", "temp", "persist")


class Allocators:
    """Writes each chunk's allocator events into the `python` line's columns."""

    def __init__(self, plane: Plane, kind: str, n_devices: int, program: str):
        self.plane, self.kind, self.n_devices = plane, kind, n_devices
        self._md = (plane.event_id("MemoryAllocation"), plane.event_id("MemoryDeallocation"))
        self._heap = np.zeros(n_devices, np.int64)
        # The lifetime peak before the profile started: above anything the window reaches.
        self._peak = np.full(n_devices, 2 * self._slot_bytes().sum(), np.int64)
        ops = [f"{program}/layer_{j}/dot_general" for j in range(ACTIVATIONS)]
        ops += [f"{program}/scratch_{j}" for j in range(TEMPS)]
        ops += [f"{program}/params/w{j}" for j in range(WEIGHTS)]
        self._ops = ops
        self._shapes = [f"[{_ROWS},{w}]" for w in self._widths()]

    @staticmethod
    def event_count(steps: int, n_devices: int) -> int:
        return n_devices * (2 * (ACTIVATIONS + TEMPS) * steps + WEIGHTS)

    @staticmethod
    def _dtypes() -> np.ndarray:
        act = np.where(np.arange(ACTIVATIONS) % 2 == 0, _BFLOAT16, _FLOAT)
        return np.concatenate([act, np.full(TEMPS, _FLOAT), np.full(WEIGHTS, _FLOAT)])

    @staticmethod
    def _slot_bytes() -> np.ndarray:
        """Allocated bytes of each slot: activations, scratch, weights."""
        activations = [(j + 1) * 4 * MIB for j in range(ACTIVATIONS)]
        scratch = [32 * MIB, 8 * MIB, 16 * MIB, 2 * MIB][:TEMPS]
        weights = [64 * MIB, 64 * MIB, 16 * MIB][:WEIGHTS]
        return np.array(activations + scratch + weights, np.int64)

    def _widths(self) -> np.ndarray:
        return self._slot_bytes() // (_ROWS * np.array([_BYTES[t] for t in self._dtypes()]))

    def merge(self, steps: Steps, md: np.ndarray, start: np.ndarray, dur: np.ndarray,
              stats: list[Stat]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Stat]]:
        """The line's columns with this chunk's allocator events appended; the line's own
        stats are absent on the new rows and the allocator's absent on the old ones."""
        slot, free, time, device = self._schedule(steps)
        n_old, n_new = md.shape[0], slot.shape[0]
        own = [Stat(s.metadata_id, np.concatenate([np.asarray(s.values),
                                                   np.zeros(n_new, np.asarray(s.values).dtype)]),
                    s.kind, s.table,
                    np.concatenate([np.ones(n_old, bool) if s.present is None else s.present,
                                    np.zeros(n_new, bool)])) for s in stats]
        new = [Stat(s.metadata_id, np.concatenate([np.zeros(n_old, np.asarray(s.values).dtype),
                                                   s.values]), s.kind, s.table,
                    np.concatenate([np.zeros(n_old, bool),
                                    np.ones(n_new, bool) if s.present is None else s.present]))
               for s in self._stats(slot, free, time, device, steps)]
        return (np.concatenate([md, np.where(free, self._md[1], self._md[0])]),
                np.concatenate([start, time]), np.concatenate([dur, np.zeros(n_new, np.int64)]),
                own + new)

    def _schedule(self, steps: Steps) -> tuple[np.ndarray, ...]:
        """(slot, is_free, time, device) of every event of the chunk, in time order."""
        ds, disp = steps.dispatch_start, steps.dispatch
        wait = steps.launch + 2 * US
        span = steps.end - 5 * US - wait
        rows = []
        for j in range(ACTIVATIONS):
            rows.append((j, False, ds + (disp * (j + 1) // (2 * (ACTIVATIONS + 2)))))
            rows.append((j, True, wait + span * (92 - j) // 100))
        for j in range(TEMPS):
            rows.append((ACTIVATIONS + j, False, wait + span * (20 + 15 * j) // 100))
            rows.append((ACTIVATIONS + j, True, wait + span * (25 + 15 * j) // 100))
        first = steps.index == 0
        for j in range(WEIGHTS):
            rows.append((ACTIVATIONS + TEMPS + j, False, ds[first] + (j + 1) * 137_000))
        slot = np.concatenate([np.full(len(t), s) for s, _, t in rows])
        free = np.concatenate([np.full(len(t), f) for _, f, t in rows])
        time = np.concatenate([t for _, _, t in rows]).astype(np.int64)
        d = np.arange(self.n_devices)
        out = (np.repeat(slot, d.shape[0]), np.repeat(free, d.shape[0]),
               (time[:, None] + d * 211_000 + 17).ravel(), np.tile(d, slot.shape[0]))
        order = np.lexsort((out[3], out[2]))
        return tuple(a[order] for a in out)

    def _stats(self, slot: np.ndarray, free: np.ndarray, time: np.ndarray, device: np.ndarray,
               steps: Steps) -> list[Stat]:
        size = self._slot_bytes()[slot]
        step_of = np.searchsorted(steps.start, time, side="right") - 1
        requested = size - 64 * (steps.index[step_of] % 4)
        heap = np.empty(slot.shape[0], np.int64)
        peak = np.empty(slot.shape[0], np.int64)
        for d in range(self.n_devices):
            mine = device == d
            running = self._heap[d] + np.cumsum(np.where(free[mine], -size[mine], size[mine]))
            heap[mine] = running
            peak[mine] = np.maximum(self._peak[d], np.maximum.accumulate(running))
            self._heap[d], self._peak[d] = running[-1], peak[mine][-1]
        stack = np.full(slot.shape[0], _STACK[self.kind], np.int64)
        available = _LIMIT[self.kind] - heap - stack
        fragmentation = np.round(0.25 * (peak - heap) / peak, 6)
        address = (0x7F00_0000_0000 + device.astype(np.int64) * (1 << 36) + slot * GIB)
        alloc = ~free
        sid = self.plane.stat_id
        if self.kind == "gpu":
            names = [f"GPU_{d}_bfc" for d in range(self.n_devices)]
            memory = Stat(sid("allocator_name"), device, "str", names)
        else:
            memory = Stat(sid("index_on_host"), device.astype(np.int64))
        region = np.where(slot < ACTIVATIONS, _OUTPUT,
                          np.where(slot < ACTIVATIONS + TEMPS, _TEMP, _PERSIST))
        return [
            memory,
            Stat(sid("bytes_reserved"), stack),
            Stat(sid("bytes_allocated"), heap),
            Stat(sid("bytes_available"), available),
            Stat(sid("fragmentation"), fragmentation, "double"),
            Stat(sid("peak_bytes_in_use"), peak),
            Stat(sid("requested_bytes"), requested),
            Stat(sid("allocation_bytes"), size),
            Stat(sid("addr"), address),
            Stat(sid("tf_op"), slot, "str", self._ops, present=alloc),
            Stat(sid("region_type"), region, "str", _REGIONS, present=alloc),
            Stat(sid("data_type"), self._dtypes()[slot], present=alloc),
            Stat(sid("shape"), slot, "str", self._shapes, present=alloc),
        ]
