"""Where a host's times sit on the wall clock, so several hosts share one timeline.

XProf's capture stores each host's line timestamps relative to the moment that host started
profiling and records that moment, in epoch nanoseconds, as `profile_start_time` on the
`Task Environment` plane. Hosts of one job start within a short while of each other, not at the
same instant, so their files' zeros differ: adding each host's start time puts them all on the
wall clock. A file whose timestamps are already absolute (at or past its start time) or that
states no start time (Chrome traces) is taken as it is.
"""

from __future__ import annotations

from .trace_data import HostTrace

TASK_ENVIRONMENT = "Task Environment"
START_STAT = "profile_start_time"


def start_time_ns(trace: HostTrace) -> int:
    """The host's `profile_start_time` (epoch ns), or 0 when the file does not state it."""
    for section in trace.sections:
        if section.name == TASK_ENVIRONMENT:
            value = section.stats.get(START_STAT)
            if isinstance(value, (int, float)) and value > 0:
                return int(value)
    return 0


def wall_offset_ns(trace: HostTrace) -> int:
    """What to add to the host's `base_ns` to read its times on the wall clock."""
    start = start_time_ns(trace)
    return start if start and trace.base_ns < start else 0
