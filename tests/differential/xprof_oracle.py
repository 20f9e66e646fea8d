"""XProf itself, run on the committed fixtures: the reference every tool is compared with.

XProf (pip `xprof`, in the test extra) converts an XSpace with
`xprof.convert.raw_to_tool_data.xspace_to_tool_data`. It needs the TensorBoard layout
(`LOGDIR/plugins/profile/<run>/<host>.xplane.pb`) and writes caches beside the file, so each
call works on a copy in a temporary logdir. Answers are cached for the test session.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# What XProf's UI asks for, except resolution 0: every event, none thinned away.
TRACE_PARAMS = {"trace_viewer_options": {"resolution": 0, "full_dma": False}}
PS_PER_US = 1_000_000
TIME_COLUMNS = [
    ("occurrences", "occurrences", 1), ("total_time", "total_time_us", 1),
    ("avg_time", "avg_time_us", 1), ("total_self_time", "total_self_time_us", 1),
    ("avg_self_time", "avg_self_time_us", 1),
]
"""XProf's op tables' count and time columns, ours, and ours / XProf's (both in microseconds)."""


def run(path: Path, tool: str, params: dict | None = None) -> Any:
    """XProf's answer for one tool, parsed from JSON."""
    return _run(str(path), tool, json.dumps(params or {}, sort_keys=True))


@functools.cache
def _run(path: str, tool: str, params: str) -> Any:
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "plugins" / "profile" / "run"
        run_dir.mkdir(parents=True)
        copy = run_dir / Path(path).name
        shutil.copyfile(path, copy)
        if tool == "memory_viewer":  # XProf extracts the HLO protos when listing its tools
            raw_to_tool_data.xspace_to_tool_names([str(copy)])
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, json.loads(params))
    if data is None:
        return None
    return json.loads(data)


def trace_events(path: Path) -> pd.DataFrame:
    """Every slice XProf's streaming trace viewer (`trace_viewer@`) draws, one row each.

    Columns: section (XProf's process name, `<host> <plane>`), track (its thread name),
    section_order / track_order (XProf's sort indices), name, start_ps (relative to XProf's
    time base), duration_ps.
    """
    doc = run(path, "trace_viewer@", TRACE_PARAMS)
    events = doc["traceEvents"]
    process, process_order, thread, thread_order = {}, {}, {}, {}
    for e in events:
        if e.get("ph") != "M":
            continue
        key = (e["pid"], e.get("tid"))
        if e["name"] == "process_name":
            process[e["pid"]] = e["args"]["name"]
        elif e["name"] == "process_sort_index":
            process_order[e["pid"]] = e["args"]["sort_index"]
        elif e["name"] == "thread_name":
            thread[key] = e["args"]["name"]
        elif e["name"] == "thread_sort_index":
            thread_order[key] = e["args"]["sort_index"]
    slices = [e for e in events if e.get("ph") == "X"]
    return pd.DataFrame({
        "section": [process[e["pid"]] for e in slices],
        "track": [thread[(e["pid"], e["tid"])] for e in slices],
        "section_order": [process_order.get(e["pid"], e["pid"]) for e in slices],
        "track_order": [thread_order.get((e["pid"], e["tid"]), e["tid"]) for e in slices],
        "name": [e["name"] for e in slices],
        "start_ps": np.rint(np.array([e["ts"] for e in slices]) * PS_PER_US).astype(np.int64),
        "duration_ps": np.rint(np.array([e.get("dur", 0) for e in slices])
                               * PS_PER_US).astype(np.int64),
    })


ADDS_HOST_COMPUTE = {"tf_keras_cpu_slow_map.xplane.pb": {6: 68.663, 8: 278.670, 11: 316.240},
                     "jax_cpu_demo.xplane.pb": {0: 50_519.182, 2: 43_526.627, 6: 66_668.102}}
"""Host compute (us) XProf counts in a step beyond ours, by fixture and our step number: work of
other threads (XLA ops, runtime threads) that its step grouping ties to the step through flows
in some steps and not in others (to the nanosecond, as XProf prints it). Every other step and
fixture: none; ours is the work on the thread that runs the steps, inside the markers."""
