"""Kernels of the slice level-of-detail structure (`xprof_widgets/_native/lod.pyx`, compiled
ahead of time); `index.py` explains the design.

Positions index `perm`, the events of every (track, depth) segment laid out by start time. A
"cut" at position i separates event i from event i + 1 of the same segment; its value
v = max(dur[i], dur[i + 1], gap between them) is the smallest pixel size at which the two stay
apart. A level keeps the cuts with v >= 4**L ps; the items between kept cuts are runs whose
longest event is stored with the cut.
"""

from __future__ import annotations

from .._native.lod import (
    MIN_ITEMS,
    N_LEVELS,
    RMQ_BLOCK,
    SEGMENT_END,
    build_lists,
    build_rmq,
    count_segments,
    cut_levels,
    level_of,
    place_segments,
    plan_levels,
    window_ranges,
    window_runs,
)

__all__ = ["MIN_ITEMS", "N_LEVELS", "RMQ_BLOCK", "SEGMENT_END", "build_lists", "build_rmq",
           "count_segments", "cut_levels", "level_of", "place_segments", "plan_levels",
           "window_ranges", "window_runs"]
