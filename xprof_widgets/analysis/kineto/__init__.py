"""What a PyTorch profiler (Kineto) trace says about its events: category, rank, launch links.

Kineto tags every event with a category (`cpu_op`, `cuda_runtime`, `kernel`, `gpu_memcpy`, ...)
that the Chrome decoder keeps as the metadata stat `category`; the analyses of GPU work read
it here rather than guessing from names. A kernel names the call that launched it by the
`correlation` arg it shares with that CUDA runtime (or driver) call on the launching thread.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from ...profile.model import Profile
from ..hosts import host_parts

KERNELS = ("kernel", "Kernel")
"""Kineto's category of GPU kernels (`Kernel` in its 2022 and older traces)."""
CPU_OPS = ("cpu_op", "Operator")
"""Kineto's category of PyTorch's CPU ops (`Operator` in its older traces)."""
STEP_MARKER = r"ProfilerStep#\d+"
"""The whole name of the profiler's step marker (`torch.profiler`'s `step()`): an annotation in
newer traces, a cpu_op in older ones."""


def meta_categories(profile: Profile) -> np.ndarray:
    """Kineto's category per metadata row ("" where the event had none): index it by `meta`."""
    return profile.memo(("kineto_categories",), lambda: np.array(
        [str(stats.get("category", "")) if isinstance(stats, dict) else ""
         for stats in profile.metadata["stats"]], dtype=object))


def has_category(profile: Profile, categories: Collection[str]) -> bool:
    """Whether any metadata row is of these Kineto categories (cheap: reads no events)."""
    return bool(np.isin(meta_categories(profile), list(categories)).any())


def any_rank_has(profile: Any, categories: Collection[str]) -> bool:
    """`has_category` on every host of a local profile or a pod (where it runs on the workers)."""
    return any(p.part for p in host_parts(profile, has_category, categories))


def events_of(profile: Profile, categories: Collection[str], section_kind: str) -> np.ndarray:
    """Global indices of the events of these categories on sections of one kind ("device" or
    "host"), in storage order (by track, then start)."""
    rows = np.isin(meta_categories(profile), list(categories))
    events = np.flatnonzero(rows[profile.meta])
    on_kind = (profile.built_tracks["section_kind"] == section_kind).to_numpy(bool)
    return events[on_kind[profile.track_of(events)]]


def rank_of(profile: Profile) -> int:
    """The trace's distributed rank, `distributedInfo.rank` of its header; 0 when absent."""
    return distributed_info(profile, "rank")


def distributed_info(profile: Profile, key: str) -> int:
    """An integer of the header's `distributedInfo` (`rank`, `world_size`); 0 when absent."""
    for stats in profile.sections["stats"]:
        info = stats.get("distributedInfo") if isinstance(stats, dict) else None
        value = info.get(key) if isinstance(info, dict) else None
        if type(value) is int:
            return value
    return 0


def args_of(profile: Profile, events: np.ndarray, names: Collection[str]
            ) -> dict[str, np.ndarray]:
    """Several args of each event as object columns (None where absent), each read by the
    decoder's compiled key lookup rather than by decoding every event's args."""
    return {name: profile.stat_column(events, name) for name in names}


def int_stat(profile: Profile, events: np.ndarray, *names: str) -> tuple[np.ndarray, np.ndarray]:
    """An integer arg as (present, int64 values), read from the first of `names` an event
    carries (Kineto renamed some: `external id` became `External id`)."""
    present = np.zeros(events.shape[0], bool)
    values = np.zeros(events.shape[0], np.int64)
    for name in names:
        missing = np.flatnonzero(~present)
        has, bits = profile.stat_ints(events[missing], name)
        present[missing[has]] = True
        values[missing[has]] = bits[has].view(np.int64)
    return present, values


def innermost_enclosing(profile: Profile, queries: np.ndarray, candidates: np.ndarray
                        ) -> np.ndarray:
    """For each query event, the deepest candidate event on its track that spans it; -1 where
    none does. Events at one depth of a track never overlap, so at each depth only the last
    candidate starting at or before the query can span it: one merge per depth."""
    out = np.full(queries.shape[0], -1, np.int64)
    q_track = profile.track_of(queries)
    q_start = profile.start_ps[queries]
    q_end = q_start + profile.duration_ps[queries]
    q_depth = profile.depth[queries]
    c_depth = profile.depth[candidates]
    for depth in np.unique(c_depth).tolist():  # shallow to deep: deeper answers overwrite
        level = candidates[c_depth == depth]
        level_track = profile.track_of(level)
        order = np.lexsort((profile.start_ps[level], level_track))
        level, level_track = level[order], level_track[order]
        at = _last_at_or_before(level_track, profile.start_ps[level], q_track, q_start)
        hit = level[np.maximum(at, 0)]
        spans = ((at >= 0) & (level_track[np.maximum(at, 0)] == q_track) & (depth < q_depth)
                 & (profile.start_ps[hit] + profile.duration_ps[hit] >= q_end))
        out[spans] = hit[spans]
    return out


def _last_at_or_before(track: np.ndarray, start: np.ndarray, q_track: np.ndarray,
                       q_start: np.ndarray) -> np.ndarray:
    """Per query, the index of the last (track, start) pair at or before it among pairs sorted
    by track then start; -1 before the first. A query's answer may lie on an earlier track."""
    n = track.shape[0]
    tracks = np.concatenate([track, q_track])
    starts = np.concatenate([start, q_start])
    is_query = np.concatenate([np.zeros(n, np.int8), np.ones(q_track.shape[0], np.int8)])
    merged = np.lexsort((is_query, starts, tracks))  # a pair before a query at the same time
    seen = np.where(merged < n, merged, -1)
    last = np.maximum.accumulate(seen)
    out = np.empty(q_track.shape[0], np.int64)
    queries = merged >= n
    out[merged[queries] - n] = last[queries]
    return out
