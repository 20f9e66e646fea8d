"""Compiled scanners over the raw XSpace wire format (`xprof_widgets/_native/wire.pyx`).

A Python loop over 5e6 parsed events costs seconds; these kernels, compiled ahead of time into the
wheel, walk the bytes once and fill numpy columns directly, so no message tree of events ever
exists. Only the event-level structure is scanned here; the small plane headers (metadata maps,
plane stats) are handed to upb by the caller. Every kernel validates lengths and reports malformed
input by returning a negative error code (with the byte offset) instead of reading out of bounds.
"""

from __future__ import annotations

from .._native.wire import (
    ERR_TRUNCATED,
    ERR_VARINT,
    ERR_WIRETYPE,
    OK,
    _len_field,
    _varint,
    count_rows,
    fill_events,
    line_depths,
    metadata_ids,
    order_and_depth,
    order_lines,
    range_max,
    scan_lines,
    scan_planes,
    scan_stat,
)

__all__ = ["ERR_TRUNCATED", "ERR_VARINT", "ERR_WIRETYPE", "OK", "_len_field", "_varint",
           "count_rows", "fill_events", "line_depths", "metadata_ids", "order_and_depth", "order_lines",
           "range_max", "scan_lines", "scan_planes", "scan_stat"]
