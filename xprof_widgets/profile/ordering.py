"""The order XProf's trace viewer shows planes and lines in, and which of them it shows.

XProf numbers each shown plane (a trace "process") and sorts by that number: device planes
(GPU planes, or TPU planes when there is no GPU) at 1 + the plane's id, custom planes at 501 +
id, then the `/host:CPU` planes in name order from 701. Inside a plane, counters come first (its
trace viewer draws a process's counters above its threads), then lines (trace "threads") by their
display id, else their id, read as a uint32. Where XProf derives the rows of GPU streams (a file
not grouped yet, see xspace_derived.already_grouped) it first renumbers the streams, compute
streams first, then by event count, busiest first, each followed by its derived rows; in a file
its profiler grouped (TensorFlow 2's) the streams keep their ids. Planes XProf does not show (the
Python tracer, CUPTI, task environment) follow here, by name: we keep their events visible.
"""

from __future__ import annotations

import re

HOST_THREADS = "/host:CPU"
GPU_PREFIX = "/device:GPU:"
TPU_PREFIX = "/device:TPU:"
CUSTOM_PREFIX = "/device:CUSTOM:"
_FIRST_DEVICE, _LAST_DEVICE = 1, 500
_FIRST_CUSTOM = _LAST_DEVICE + 1
_HOST_THREADS_ID = _LAST_DEVICE + 200 + 1
_NOT_SHOWN_BY_XPROF = 1 << 40

INTERNAL_EVENTS = frozenset({
    "MemoryAllocation", "MemoryDeallocation", "PrefetchProduce", "PrefetchConsume",
    "ParallelInterleaveProduce", "ParallelInterleaveConsume",
    "ParallelInterleaveInitializeInput", "ParallelMapProduce", "ParallelMapConsume",
    "MapAndBatchProduce", "MapAndBatchConsume", "ParseExampleProduce", "ParseExampleConsume",
})
"""Event names XProf keeps out of the trace viewer (allocator and tf.data bookkeeping)."""


def natural_key(text: str) -> tuple:
    """'stream 10' after 'stream 9'."""
    return tuple(int(part) if part.isdigit() else part.lower()
                 for part in re.split(r"(\d+)", text))


def plane_kind(name: str) -> str:
    if name.startswith("/device:"):
        return "device"
    if name.startswith("/host:"):
        return "host"
    return "other"


def plane_sort_keys(planes: list[tuple[str, int]]) -> list[tuple]:
    """Sort keys of a file's planes, given as (name, plane id), in XProf's process order."""
    names = [name for name, _ in planes]
    has_gpu = any(n.startswith(GPU_PREFIX) for n in names)
    device_prefix = GPU_PREFIX if has_gpu else TPU_PREFIX
    hosts = sorted(n for n in names if n.startswith(HOST_THREADS))
    keys = []
    for name, plane_id in planes:
        if name.startswith(device_prefix):
            pid = _FIRST_DEVICE + plane_id
            pid = pid if pid <= _LAST_DEVICE else _FIRST_DEVICE
        elif name.startswith(CUSTOM_PREFIX):
            pid = _FIRST_CUSTOM + plane_id
        elif name.startswith(HOST_THREADS):
            pid = _HOST_THREADS_ID + hosts.index(name)
        else:
            pid = _NOT_SHOWN_BY_XPROF
        keys.append((pid, natural_key(name)))
    return keys


def line_sort_key(line_id: int, display_id: int) -> int:
    """A line's place in its plane: its display id, else its id, as XProf's uint32 tid."""
    return (display_id or line_id) & 0xFFFF_FFFF


_DERIVED_LINE_IDS = range(0xDEADBEEF, 0xDEADBEEF + 390)  # XProf's ids of the rows it derives
GPU_STREAM_STRIDE = 8
"""GPU streams' sort keys are their rank times this: the rows derived from a stream go between."""


def is_derived_line(line_id: int) -> bool:
    """Whether a line id is one XProf gives the rows it derives."""
    return line_id in _DERIVED_LINE_IDS


def gpu_line_keys(lines: list[tuple[int, int, str, int]]) -> list[int]:
    """Sort keys of a GPU plane's lines, given as (id, display id, name, event count).

    XProf renumbers the streams for its trace viewer: compute streams first, then the busiest;
    lines it derived itself (ids from 0xdeadbeef) keep their ids and follow the streams.
    """
    streams = [k for k, (line_id, *_rest) in enumerate(lines) if not is_derived_line(line_id)]
    streams.sort(key=lambda k: ("Compute" not in lines[k][2], -lines[k][3], lines[k][0]))
    keys = [line_sort_key(line_id, display_id) for line_id, display_id, _, _ in lines]
    for rank, k in enumerate(streams, start=1):
        keys[k] = rank * GPU_STREAM_STRIDE
    return keys
