"""Assembles one host's XSpace: device planes, `/host:CPU`, `/host:metadata`, `Task Environment`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import gpu, tpu
from .hlo import build_hlo_proto
from .host import HostThreads
from .program import Program, layers_for, make_program
from .timeline import EVAL_EVERY, FIRST_STEP_PS, is_eval, plan_steps
from .xspace import Plane, write_xspace

CHUNK_EVENTS = 1_000_000
EPOCH_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z: profiles start here + seed seconds
MAX_LAYERS = 60


@dataclass
class HostResult:
    path: Path
    events: int
    steps: int


def programs_for(kind: str, n_events: float, devices: int, seed: int,
                 custom_calls: bool = False) -> list[Program]:
    """The train and eval programs, sized so that a step has about sqrt(events/device) ops."""
    peak = (
        (tpu.PEAK_TFLOPS * 1e12, tpu.PEAK_HBM_GBPS * 1e9)
        if kind == "tpu"
        else (gpu.PEAK_TFLOPS * 1e12, gpu.MEMORY_BW)
    )
    layers = min(MAX_LAYERS, layers_for(int(math.sqrt(max(n_events, 1) / devices))))
    return [
        make_program("jit_train_step", kind, layers, seed, True, *peak,
                     custom_call=custom_calls),
        make_program("jit_eval_step", kind, layers, seed, False, *peak),
    ]


def write_host(
    path: Path,
    kind: str,
    n_events: int,
    devices: int,
    seed: int,
    host: int,
    hostname: str,
    html_event: bool,
    allocator: bool = False,
    custom_calls: bool = False,
) -> HostResult:
    programs = programs_for(kind, n_events, devices, seed, custom_calls)
    tmpdir = path.parent
    if kind == "tpu":
        device_side = tpu.TpuDevices(devices, programs, tmpdir, first_plane_id=2,
                                     custom_calls=custom_calls)
        device_planes = device_side.planes
    else:
        device_side = gpu.GpuDevices(devices, programs, tmpdir, first_plane_id=2)
        device_planes = device_side.all_planes
    cpu = Plane(1, "/host:CPU", tmpdir)
    threads = HostThreads(cpu, kind, devices, [p.name for p in programs], html_event, allocator)

    def count(steps: int) -> int:
        evals = steps // EVAL_EVERY
        return device_side.event_count(steps, evals) + threads.event_count(steps, evals)

    per_step = count(EVAL_EVERY) / EVAL_EVERY
    guess = max(1, round(n_events / per_step))
    n_steps = min(range(max(1, guess - 2), guess + 3), key=lambda s: abs(count(s) - n_events))
    chunk = max(1, int(CHUNK_EVENTS // per_step))
    first = FIRST_STEP_PS
    for c, k0 in enumerate(range(0, n_steps, chunk)):
        rng = np.random.default_rng([seed, host, c])
        index = np.arange(k0, min(n_steps, k0 + chunk))
        busy = device_side.plan(index, is_eval(index), rng)
        steps = plan_steps(index, first, device_side.nominal_ps, busy, rng)
        device_side.write(steps)
        threads.write(steps)
        first = int(steps.end[-1])
    if custom_calls:
        device_side.finish(first)
    metadata = _metadata_plane(programs, tmpdir)
    task = Plane(0, "Task Environment", tmpdir)
    start_ns = EPOCH_NS + seed * 1_000_000_000
    task.stats += [
        task.stat("profile_start_time", start_ns, "uint64"),
        task.stat("profile_stop_time", start_ns + first // 1000 + 1_000_000, "uint64"),
    ]
    planes = [*device_planes, cpu, metadata, task]
    write_xspace(path, planes, [hostname])
    return HostResult(path, sum(p.event_count for p in planes), n_steps)


def _metadata_plane(programs: list[Program], tmpdir: Path) -> Plane:
    """`/host:metadata`: per program, metadata id = program id (as int64) with its `Hlo Proto`."""
    plane = Plane(0, "/host:metadata", tmpdir)
    for program in programs:
        key = (
            program.program_id - (1 << 64) if program.program_id >= 1 << 63 else program.program_id
        )
        plane.event_id(
            program.display,
            stats=[
                plane.stat("Hlo Proto", build_hlo_proto(program), "bytes"),
                plane.stat("program_id", program.program_id, "uint64"),
            ],
            metadata_id=key,
        )
    return plane
