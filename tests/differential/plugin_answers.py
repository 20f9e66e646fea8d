"""torch-tb-profiler's kept answers for its ResNet50 V100 sample, and our Kernel Stats in the
shape of its kernel table: what the plugin tests and tests/bench/torch_top_ops_table.py share.

The kept file (tests/data/public/torch_tb_plugin/result_check_file.txt) is the plugin's own test
file: one JSON answer a line, in the order its end-to-end test asked its server for run
`resnet50_num_workers_0`, span 1 (the committed trace): VIEWS. The full file goes on with the
same five for a second run; the first five are this trace's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_stats import kernel_stats

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "data" / "public" / "torch_tb_plugin"
ANSWERS = PLUGIN_DIR / "result_check_file.txt"
TRACE = PLUGIN_DIR / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
VIEWS = ("overview", "operator_charts", "operator_table", "kernel_table", "kernel_chart")
OPERATOR_FIELDS = {"calls": "calls", "host_self_time_us": "host_self_duration",
                   "host_total_time_us": "host_total_duration",
                   "device_self_time_us": "device_self_duration",
                   "device_total_time_us": "device_total_duration"}
"""Our FrameworkOpStats column: the plugin's operator table column."""
MEANS = {"blocks_per_sm": ("blocks per SM", "mean_blocks_per_sm"),
         "occupancy": ("est. achieved occupancy %", "mean_est_achieved_occupancy_pct")}
"""The plugin's kernel mean: (the kernel arg it averages, our column)."""


def kept_answers(path: Path = ANSWERS) -> dict[str, dict]:
    """The five answers for the file's first run, by VIEWS."""
    lines = path.read_text().splitlines()[:len(VIEWS)]
    if len(lines) < len(VIEWS):
        raise ValueError(f"{path}: {len(lines)} answers, expected {len(VIEWS)} ({VIEWS})")
    return dict(zip(VIEWS, map(json.loads, lines), strict=True))


def kept_operators(path: Path = ANSWERS) -> dict[str, dict[str, float]]:
    """The operator table by op name, in our column names (OPERATOR_FIELDS)."""
    rows = kept_answers(path)["operator_table"]["data"]
    return {r["name"]: {ours: float(r[theirs]) for ours, theirs in OPERATOR_FIELDS.items()}
            for r in rows}


def kernels_by_name(profile: xw.Profile) -> dict[str, dict]:
    """Our Kernel Stats summed per kernel name, as the plugin's table keys them: count, sum,
    max, min, tc_used, and per MEANS [sum of mean x time, time, rows stating no value]."""
    out: dict[str, dict] = {}
    for row in kernel_stats(profile).itertuples(index=False):
        mine = out.setdefault(row.kernel_name, {
            "count": 0, "sum": 0.0, "max": -math.inf, "min": math.inf,
            "tc_used": row.is_kernel_using_tensor_core, **{m: [0.0, 0.0, 0] for m in MEANS}})
        mine["count"] += row.occurrences
        mine["sum"] += row.total_duration_us
        mine["max"] = max(mine["max"], row.max_duration_us)
        mine["min"] = min(mine["min"], row.min_duration_us)
        for mean, (_, column) in MEANS.items():
            value = getattr(row, column)
            if math.isnan(value):
                mine[mean][2] += 1
            else:
                mine[mean][0] += value * row.total_duration_us
                mine[mean][1] += row.total_duration_us
    return out
