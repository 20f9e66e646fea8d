"""A small XSpace of TPU performance-counter samples, for XProf's utilization viewer.

Exactly what that tool reads (xprof/convert/xplane_to_utilization_viewer.cc): `/device:TPU:N`
planes stating `device_id` and `device_type_string`; each line is one sample (its id the
sample number) whose events carry `counter_value`, their metadata `performance_counter_id`.
Two "TPU v6 Lite" chips sample every counter the v6e formulas read, at plausible rates over a
10 ms window; one sample has no TensorCore cycles (only the SparseCore rows follow) and one no
HBM traffic (no read/write split). A third plane is a "TPU v7x", whose counters we do not read.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..analysis import tpu_counter_ids as ids
from .xspace import Plane, Stat, write_xspace

CYCLES = 17_500_000  # 10 ms at the v6e's 1.75 GHz
SAMPLES = {0: 3, 1: 2}  # samples per v6e chip
US_PS = 1_000_000
_SCALE = {"MATMUL": 40, "VPU": 5, "PACKED": 12, "ROTATE": 12, "TRANSPOSE": 12}
"""Per-counter rates kept under the units' peaks (8 matmul kinds share an MXU, 20 VPU
counters four ALUs, 4 kinds an XLU's one instruction in 4 cycles)."""


def _v6e_counters(rng: np.random.Generator, cycles: int, hbm: bool) -> dict[str, tuple[int, int]]:
    """name -> (counter id, value) of one sample; `cycles` 0 leaves the TensorCore out."""
    out: dict[str, tuple[int, int]] = {}

    def put(name: str, counter: int, fraction: float, of: int) -> None:
        out[name] = (counter, int(of * fraction))

    if cycles:
        busy = rng.dirichlet([2, 3, 5])  # no, one, two MXUs busy: shares of the cycles
        xlu = rng.dirichlet([6, 3, 1])
        for name in ids.TC_SLOT:
            fraction = rng.uniform(0.02, 0.6) / _SCALE.get(name.split("_")[0], 1)
            if name.startswith(("MXU_BUSY_", "XLU_BUSY_")):
                fraction = (busy if name.startswith("MXU") else xlu)[int(name[-1])]
            put(f"tc_{name.lower()}", ids.tc(name), 1.0 if name == "CYCLES" else fraction, cycles)
        if hbm:
            for s in range(ids.HBM_STACKS):
                for c in range(ids.HBM_CHANNELS):
                    for kind in ids.HBM_OFFSET:
                        put(f"hbm_{s}_hbmc_{c}_{kind.lower()}", ids.hbm(s, c, kind),
                            rng.uniform(0.0, 0.12), cycles)
        for kind in ids.ICI_SLOT:
            put(f"ici_{kind.lower()}", ids.ici(kind), rng.uniform(0.0, 0.5), cycles)
    for core in (0, 1):
        sc_cycles = int(CYCLES * rng.uniform(0.9, 1.0))
        for tile in range(ids.SC_TILES):
            for name in ids.SC_TILE_OFFSET:
                put(f"sc_{core}_tile_{tile}_{name.lower()}", ids.sc_tile(core, tile, name),
                    1.0 if name == "CYCLES" else rng.uniform(0.0, 0.4), sc_cycles)
        for name in ids.SCS_OFFSET:
            put(f"sc_{core}_scs_{name.lower()}", ids.scs(core, name),
                1.0 if name == "CYCLES" else rng.uniform(0.0, 0.7), sc_cycles)
    return out


def _device(plane: Plane, device_id: int, chip: str) -> None:
    plane.stats += [plane.stat("device_id", device_id), plane.stat("device_type_string", chip)]


def _sample(plane: Plane, sample: int, at_ps: int, counters: dict[str, tuple[int, int]]) -> None:
    """One line of counter events, all at the sample's time."""
    names = list(counters)
    md = np.array([plane.event_id(n, stats=[plane.stat("performance_counter_id",
                                                       counters[n][0], "uint64")])
                   for n in names])
    values = np.array([counters[n][1] for n in names], np.uint64)
    plane.line(sample, "Performance Counters").add(
        md, np.full(len(names), at_ps, np.int64), np.zeros(len(names), np.int64),
        [Stat(plane.stat_id("counter_value"), values, "uint64")])


def write_utilization_profile(path: str | Path, seed: int = 0) -> Path:
    """Writes the counter samples to `path` (an .xplane.pb) and returns it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        planes = []
        for device, n in SAMPLES.items():
            plane = Plane(device + 1, f"/device:TPU:{device}", Path(tmp))
            _device(plane, device, "TPU v6 Lite")
            for s in range(n):
                idle = device == 0 and s == n - 1  # the TensorCore never ran
                counters = _v6e_counters(rng, 0 if idle else CYCLES, hbm=(device, s) != (1, 1))
                _sample(plane, s + 1, (s + 1) * 10_000 * US_PS, counters)
            planes.append(plane)
        v7x = Plane(len(planes) + 1, f"/device:TPU:{len(planes)}", Path(tmp))
        _device(v7x, len(planes), "TPU v7x")
        _sample(v7x, 1, 10_000 * US_PS, {"cycles": (1, CYCLES), "scalar_issue": (2, CYCLES // 3)})
        write_xspace(path, planes + [v7x], [path.name.split(".")[0]])
    return path
