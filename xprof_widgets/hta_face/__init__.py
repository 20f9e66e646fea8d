"""HTA's (Holistic Trace Analysis) interface over our analyses: `TraceAnalysis`, `TraceDiff`.

This is the public face's floor: it imports analysis/ and profile/, and nothing below imports
it. Its modules hold the analyses only HTA's interface asks for (launch stats, queues, copy
bandwidth); the breakdowns shared with the Overview live in analysis/kineto/gpu_time.py.
"""

from .counters import TimeSeriesTypes
from .trace_analysis import TraceAnalysis
from .trace_diff import DeviceType, TraceDiff

__all__ = ["DeviceType", "TimeSeriesTypes", "TraceAnalysis", "TraceDiff"]
