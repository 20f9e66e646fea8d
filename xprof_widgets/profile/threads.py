"""How many threads a decode may use, and the pool that runs its parts.

The kernels release the GIL, so a thread per core the process may use decodes that many parts at
once. The count is the process's CPU affinity (a job scheduler's or `taskset`'s pinning) capped
by its cgroup's CPU quota (a container's `--cpus`), as a process sees them, not the machine's
core count: more threads than the quota only queue. XPROF_WIDGETS_THREADS overrides both.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
_CGROUP_QUOTAS = (("/sys/fs/cgroup/cpu.max", None),  # v2: "<quota> <period>" or "max <period>"
                  ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def decode_threads() -> int:
    """Threads for a decode: XPROF_WIDGETS_THREADS when set (1 = no worker threads), else
    the cores the process may run on, capped by its cgroup quota; at least 1."""
    wanted = os.environ.get("XPROF_WIDGETS_THREADS", "").strip()
    if wanted:
        try:
            return max(1, int(wanted))
        except ValueError:
            pass  # a malformed override is ignored, as an unset one
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def cgroup_cpu_quota() -> float | None:
    """CPUs the cgroup's quota allows (cgroup v2, then v1), None without a quota."""
    for quota_file, period_file in _CGROUP_QUOTAS:
        try:
            with open(quota_file) as f:
                fields = f.read().split()
            if period_file is not None:
                with open(period_file) as f:
                    fields.append(f.read().strip())
        except OSError:
            continue
        if len(fields) < 2 or fields[0] in ("max", "-1"):
            return None
        try:
            quota, period = int(fields[0]), int(fields[1])
        except ValueError:
            return None
        return quota / period if quota > 0 and period > 0 else None
    return None


def balanced(weights: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of `weights` in at most `parts` groups of about equal total weight, heaviest
    first into the lightest group; each group in ascending order."""
    groups: list[list[int]] = [[] for _ in range(max(1, parts))]
    loads = [0] * len(groups)
    for k in sorted(range(len(weights)), key=lambda k: -weights[k]):
        lightest = loads.index(min(loads))
        groups[lightest].append(k)
        loads[lightest] += weights[k]
    return [sorted(group) for group in groups if group]


def run_parts(work: Callable[[T], R], parts: Sequence[T]) -> list[R]:
    """work(part) for every part, on one thread per part beyond the first (this thread runs
    the first); results in the order of `parts`."""
    if len(parts) <= 1:
        return [work(part) for part in parts]
    with ThreadPoolExecutor(len(parts) - 1, thread_name_prefix="xprof-decode") as pool:
        later = [pool.submit(work, part) for part in parts[1:]]
        first = work(parts[0])
        return [first] + [future.result() for future in later]


THREADED_FROM = 1 << 18
"""Events below which `each_balanced` stays on the calling thread: starting the pool costs more
than it saves (some 4 ms on a 50,000-event profile's tool passes)."""


def threads_for(weights: Sequence[int]) -> int:
    """Threads `each_balanced` uses for items of these weights (events)."""
    return decode_threads() if sum(weights) >= THREADED_FROM else 1


def each_balanced(work: Callable[[T], R], items: Sequence[T], weights: Sequence[int]) -> list[R]:
    """work(item) for every item, the items in `balanced` groups by weight (events; a thread per
    group, `threads_for` them); results in the order of `items`, whichever thread made them."""
    groups = balanced(weights, threads_for(weights))
    out: list = [None] * len(items)
    for group, made in zip(groups, run_parts(lambda g: [work(items[k]) for k in g], groups),
                           strict=True):
        for k, result in zip(group, made, strict=True):
            out[k] = result
    return out
