"""A rank's trace written again with HTA's counters in it: the queue length of each stream and
the bandwidth of each kind of copy, as Chrome counter events (`"ph": "C"`), so any trace viewer
(Perfetto, chrome://tracing, ours) draws them as counter tracks beside the rank's events.

The events are HTA's `generate_trace_with_counters` events: `Queue Length` per device `pid` and
stream (`id`), and per kind of copy (`Memcpy HtoD`, ..., `Memset`) its `Memcpy BW` in GB/s. They
are made as text and put at the head of the file's `traceEvents` array, so the trace is neither
parsed into Python objects nor re-encoded: its own bytes are kept as they were (HTA loads the
whole JSON and dumps it again, indented). Their `ts` are the file's own clock, to the picosecond.
"""

from __future__ import annotations

import gzip
import json
import os
import posixpath
import re
from enum import Flag, auto

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.locate import FileSystem
from ..profile.model import PS_PER_US
from .events import RankFile


class TimeSeriesTypes(Flag):
    """HTA's choice of counters (HTA's own flag works too: members are read by name)."""

    QUEUE_LENGTH = auto()
    MEMCPY_BANDWIDTH = auto()


def wanted(time_series: Flag | None) -> set[str]:
    """The names of the counters asked for: both by default."""
    if time_series is None:
        return {member.name for member in TimeSeriesTypes}
    kind = type(time_series)
    return {member.name for member in TimeSeriesTypes
            if getattr(kind, member.name, None) is not None
            and getattr(kind, member.name) in time_series}


_TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
_LIST_FORM = re.compile(rb"\s*\[\s*")  # a trace that is the events' array alone
_GZIP_MAGIC = b"\x1f\x8b"


def counter_events(queue: pd.DataFrame | None, bandwidth: pd.DataFrame | None,
                   zero_ps: int) -> list[str]:
    """The counter events' JSON texts: the queue series' (get_queue_length_time_series'
    columns), then the bandwidth series' (get_memory_bw_time_series'), on the file's clock."""
    texts: list[str] = []
    if queue is not None and len(queue):
        texts += _texts(queue["ts"], zero_ps, '{"ph":"C","name":"Queue Length","pid":'
                        + queue["pid"].astype(np.int64).astype(str) + ',"id":'
                        + queue["stream"].astype(np.int64).astype(str) + ',"ts":',
                        ',"args":{"Queue Length":'
                        + queue["queue_length"].astype(np.int64).astype(str) + "}}")
    if bandwidth is not None and len(bandwidth):
        names = bandwidth["name"].astype(str).map(json.dumps)
        values = bandwidth["memory_bw_gbps"].astype(np.float64).map(repr)
        texts += _texts(bandwidth["ts"], zero_ps, '{"ph":"C","name":' + names + ',"pid":'
                        + bandwidth["pid"].astype(np.int64).astype(str) + ',"ts":',
                        ',"args":{"Memcpy BW":' + values + "}}")
    return texts


def _texts(ts_us: pd.Series, zero_ps: int, head: pd.Series, tail: pd.Series) -> list[str]:
    return (head + _file_ts(ts_us.to_numpy(np.float64), zero_ps) + tail).tolist()


def _file_ts(ts_us: np.ndarray, zero_ps: int) -> pd.Series:
    """Table times (us) as the file's `ts` text: whole microseconds, and their fraction to the
    picosecond where there is one (an epoch in us exceeds what a float64 holds to the ns)."""
    whole_us, rest_ps = divmod(zero_ps, PS_PER_US)
    ps = np.rint(ts_us * PS_PER_US).astype(np.int64) + rest_ps
    whole = pd.Series(ps // PS_PER_US + whole_us).astype(str)
    fraction = pd.Series(ps % PS_PER_US)
    digits = ("." + fraction.astype(str).str.zfill(6).str.rstrip("0")).where(fraction > 0, "")
    return whole + digits.to_numpy(object)


def write_with_counters(file: RankFile, events: list[str], output_suffix: str) -> str:
    """Writes `file` again as `<name><output_suffix>.json[.gz]` beside it, with `events` at the
    head of its traceEvents; returns the path written."""
    fs = FileSystem(file.path)
    data = fs.read(fs.strip(file.path))
    zipped = data[:2] == _GZIP_MAGIC
    if zipped:
        data = gzip.decompress(data)
    found = _LIST_FORM.match(data) or _TRACE_EVENTS.search(data)
    if found is None:
        raise ProfileError(f"{file.path}: no traceEvents array to add the counters to.")
    at = found.end()
    empty = data[at:at + 1] == b"]"
    added = ",\n".join(events).encode()
    out = data[:at] + added + (b"" if empty or not events else b",\n") + data[at:]
    path = _output_path(fs, file.path, output_suffix)
    fs.write(fs.strip(path), gzip.compress(out, compresslevel=6) if zipped else out)
    return path


def _output_path(fs: FileSystem, path: str, suffix: str) -> str:
    """HTA's name: the first `.json` of the file's name gets the suffix before it."""
    head, name = posixpath.split(path) if fs.remote else os.path.split(path)
    if ".json" not in name:
        raise ProfileError(f"{path}: the file's name has no .json to put {suffix!r} before.")
    return fs.join(head, name.replace(".json", f"{suffix}.json", 1))
