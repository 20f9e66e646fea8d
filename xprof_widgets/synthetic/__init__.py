"""Synthetic XSpace profiles shaped like real TPU and GPU training runs, of any size.

`write_synthetic(path, n_events, kind="tpu")` or
`python -m xprof_widgets.synthetic OUT_PATH --events N --kind tpu|gpu [--seed S] [--hosts H]`.
The bytes depend only on the arguments. Events are encoded a column at a time and spooled to
disk line by line, so 5e7 events (about 1 GB) take a minute or two and little memory.

What a host file holds (each module tells the details):
- TPU: `/device:TPU:0..3`, lines `Steps`, `XLA Modules`, `XLA Ops`, `Async XLA Ops`,
  `XLA TraceMe`, timestamp_ns 0 and absolute offsets; peak FLOPS/bandwidth plane stats.
- GPU: `/device:GPU:0..3`, one line per stream (`Stream #12(Compute)`, ...), and `/host:CUPTI`
  with a launch per kernel or copy.
- `/host:CPU`: `python` (`train` steps with `step_num`, `_r`), `tf_data_private_threadpool/1003`
  (the input pipeline), on TPU `pjrt-tpu-tasks/1005` (`DoEnqueueProgram`); with `allocator`,
  each device's allocator events on `python` (`allocator.py`).
- With `custom_calls` (TPU): a Pallas custom call per layer, its first steps traced on LLO lines
  (`LLO Utilization`, `Pallas Primitives`, `LLO Instructions`, per-unit instruction lines), and
  a `Performance Counters` sample per chip (`llo.py`).
- `/host:metadata`: per program an `Hlo Proto` with buffer assignment; `Task Environment`.
- Programs: `jit_train_step` every step, `jit_eval_step` every `EVAL_EVERY`-th step. Every
  `INPUT_BOUND_EVERY`-th step (9, 19, ...) waits for input about `INPUT_BOUND_FACTOR` times as
  long as its device work.

Links: an async pair's `-start` op (flow direction 2), its `Async XLA Ops` event (3) and its
`-done` op (1) share a `flow` id; `DoEnqueueProgram` (`_pt`=12, `_p`) feeds the device module
with `_ct`=12 and the same `_c`; a CUPTI launch and its GPU activity share `correlation_id`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .host import HTML_EVENT_NAME
from .profile import EPOCH_NS, HostResult, write_host
from .timeline import EVAL_EVERY, INPUT_BOUND_EVERY, INPUT_BOUND_FACTOR

__all__ = [
    "EVAL_EVERY",
    "HTML_EVENT_NAME",
    "INPUT_BOUND_EVERY",
    "INPUT_BOUND_FACTOR",
    "SyntheticRun",
    "generate",
    "write_synthetic",
]

DEFAULT_DEVICES = 4


@dataclass
class SyntheticRun:
    """What was written: the path given back by `write_synthetic` and one result per host."""

    path: Path
    hosts: list[HostResult]

    @property
    def events(self) -> int:
        return sum(h.events for h in self.hosts)


def run_name(seed: int) -> str:
    """The run folder name, a timestamp as profilers write it (from the profile start time)."""
    return time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(EPOCH_NS // 10**9 + seed))


def hostname(kind: str, seed: int, host: int) -> str:
    return f"t1v-n-{seed:08x}-w-{host}" if kind == "tpu" else f"gpu-node-{host}"


def generate(
    path: str | Path,
    n_events: int,
    kind: str = "tpu",
    seed: int = 0,
    hosts: int = 1,
    devices: int = DEFAULT_DEVICES,
    html_event: bool = False,
    allocator: bool = False,
    custom_calls: bool = False,
) -> SyntheticRun:
    """Writes the profile(s) and reports what each host file holds.

    A `path` that is a directory (existing, or written with a trailing slash) is a logdir: each
    host goes to `path/plugins/profile/<run>/<host>.xplane.pb` and the run folder is returned.
    Otherwise `path` is the one file (`hosts` must be 1). `n_events` counts all hosts together.
    `html_event` adds one host event named `HTML_EVENT_NAME` (an `<img onerror>` tag) for
    HTML-safety tests; `allocator` adds each device's allocator events (the memory profile's
    data); `custom_calls` (TPU) makes the forward softmax a Pallas custom call, traced with LLO
    lines, and adds performance counters (`llo.py`).
    """
    if kind not in ("tpu", "gpu"):
        raise ValueError(f"kind must be 'tpu' or 'gpu', not {kind!r}")
    if custom_calls and kind != "tpu":
        raise ValueError("custom_calls (Pallas kernels with LLO tracing) are TPU-only")
    n_events = int(n_events)
    if n_events < 1 or hosts < 1 or not 1 <= devices <= 64:
        raise ValueError("n_events and hosts must be at least 1, devices from 1 to 64")
    as_dir = Path(path).is_dir() or str(path).endswith(("/", "\\"))
    path = Path(path)
    if as_dir:
        out_dir = path / "plugins" / "profile" / run_name(seed)
        files = [out_dir / f"{hostname(kind, seed, h)}.xplane.pb" for h in range(hosts)]
    elif hosts > 1:
        raise ValueError(
            f"{path}: {hosts} hosts need a directory (a logdir) to write into; "
            "pass an existing directory or a path ending in '/'"
        )
    else:
        out_dir, files = path.parent, [path]
    out_dir.mkdir(parents=True, exist_ok=True)
    results = [
        write_host(
            f,
            kind,
            n_events // hosts + (h < n_events % hosts),
            devices,
            seed,
            h,
            hostname(kind, seed, h),
            html_event,
            allocator,
            custom_calls,
        )
        for h, f in enumerate(files)
    ]
    return SyntheticRun(out_dir if as_dir else path, results)


def write_synthetic(path: str | Path, n_events: int, kind: str = "tpu", **options: Any) -> Path:
    """Writes a synthetic profile of about `n_events` events (the other options as
    `generate`'s); returns the file, or the run folder when `path` is a directory."""
    return generate(path, n_events, kind, **options).path
