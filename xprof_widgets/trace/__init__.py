"""The in-kernel trace index behind TraceViewer: level-of-detail windows, search, flows, details.

    index = trace_index(profile)              # built once per profile
    window = index.window(0, 1e6, 1600)       # a bounded answer; window.to_frames() for pandas
    content, buffers = encode_window(window, strings)   # the wire form (trace_protocol.md)
"""

from .encode import (
    StringTracker,
    aggregate_content,
    answer_search,
    answer_window,
    encode_window,
)
from .flows import FlowIndex
from .index import TraceIndex, trace_index
from .search import SearchResult, search
from .window import Window

__all__ = ["FlowIndex", "SearchResult", "StringTracker", "TraceIndex", "Window",
           "aggregate_content", "answer_search", "answer_window", "encode_window", "search",
           "trace_index"]
