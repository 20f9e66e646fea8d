"""A small XSpace of TPU performance-counter samples, for XProf's utilization viewer.

Exactly what that tool reads (xprof/convert/xplane_to_utilization_viewer.cc): `/device:TPU:N`
planes stating `device_id` and `device_type_string`; each line is one sample (its id the
sample number) whose events carry `counter_value`, their metadata `performance_counter_id`.
Two "TPU v6 Lite" chips and a "TPU v7x" sample every counter their formulas read
(analysis/utilization_metrics.py), at plausible rates over a 10 ms window; on two chips the last
sample has no TensorCore cycles (only the SparseCore rows follow), a sample of two chips has
no HBM traffic (no read/write split), one sample states its values as doubles, and the v7x
writes its lines in falling id order.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..analysis.utilization_metrics import CHIPS as CHIPS_METRICS
from .xspace import Plane, Stat, write_xspace

WINDOW_S = 0.01  # each sample counts 10 ms
FREQUENCY_HZ = {"TPU v6 Lite": 1.75e9, "TPU v7x": 1.9e9}
CHIPS = {0: ("TPU v6 Lite", 3), 1: ("TPU v6 Lite", 2), 2: ("TPU v7x", 3)}  # device: chip, samples
US_PS = 1_000_000


def _counters(rng: np.random.Generator, chip: str, idle: bool, no_hbm: bool) -> dict[int, int]:
    """counter id -> value of one sample: every counter the chip's metrics read. The cycle
    counts (the peaks' counters) come first; each metric's own counters then get a share of its
    peak (a counter two metrics read keeps the first one's). `idle`: no TensorCore cycles;
    `no_hbm`: no HBM counters."""
    metrics = CHIPS_METRICS[chip]
    cycles = int(FREQUENCY_HZ[chip] * WINDOW_S)
    out: dict[int, int] = {}
    tensor_core = {m.gate for m in metrics if m.gate is not None}
    for m in metrics:
        if m.peak[0] in ("x", "div", "rate"):
            out.setdefault(m.peak[1], int(cycles * rng.uniform(0.9, 1.0)))
    hbm = {c for m in metrics if m.name.startswith("HBM Rd+Wr") for c, _ in m.terms}
    for m in metrics:
        kind, *args = m.peak
        if kind == "of":
            continue
        of = out[args[0]]
        peak = of * args[1] if kind == "x" else of // args[1] if kind == "div" else \
            args[1] * of / args[2]
        busy = rng.uniform(0.0, 0.03) if "Skipped" in m.name else rng.uniform(0.05, 0.7)
        share = busy * peak / sum(w for _, w in m.terms) * m.divisor
        for counter, _ in m.terms:
            out.setdefault(counter, int(share * rng.uniform(0.8, 1.2)))
    return {c: v for c, v in out.items()
            if not (idle and c in tensor_core) and not (no_hbm and c in hbm)}


def _device(plane: Plane, device_id: int, chip: str) -> None:
    plane.stats += [plane.stat("device_id", device_id), plane.stat("device_type_string", chip)]


def _sample(plane: Plane, sample: int, at_ps: int, counters: dict[int, int],
            as_double: bool = False) -> None:
    """One line of counter events, all at the sample's time, named by their counter id (values
    as uint64 stats, or as doubles, which XProf reads too)."""
    ids = list(counters)
    md = np.array([plane.event_id(f"counter_{c}", stats=[plane.stat("performance_counter_id", c,
                                                                    "uint64")]) for c in ids])
    values = np.array([counters[c] for c in ids], np.float64 if as_double else np.uint64)
    plane.line(sample, "Performance Counters").add(
        md, np.full(len(ids), at_ps, np.int64), np.zeros(len(ids), np.int64),
        [Stat(plane.stat_id("counter_value"), values, "double" if as_double else "uint64")])


def write_utilization_profile(path: str | Path, seed: int = 0) -> Path:
    """Writes the counter samples to `path` (an .xplane.pb) and returns it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        planes = []
        for device, (chip, n) in CHIPS.items():
            plane = Plane(device + 1, f"/device:TPU:{device}", Path(tmp))
            _device(plane, device, chip)
            for s in range(n)[::-1] if chip == "TPU v7x" else range(n):  # lines not by id
                counters = _counters(rng, chip, idle=s == n - 1 and device != 1,
                                     no_hbm=(device, s) in ((1, 1), (2, 1)))
                _sample(plane, s + 1, (s + 1) * 10_000 * US_PS, counters,
                        as_double=(device, s) == (1, 0))
            planes.append(plane)
        write_xspace(path, planes, [path.name.split(".")[0]])
    return path
