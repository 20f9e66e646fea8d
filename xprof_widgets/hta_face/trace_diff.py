"""`TraceDiff`: HTA's comparison of two runs' ops and kernels, over analysis/kineto/trace_diff.py.

HTA's `TraceDiff.compare_traces` counts each name's events and time in one profiler step of one
rank of each run (`xw.compare(a, b).trace_diff()` is the same count in our columns); here the
answer takes HTA's shape: indexed by name, `<label>_counts` and `<label>_total_duration` (us) for
Control and Test, `diff_counts`, `diff_duration`, `counts_change_categories` (`+`, `-`, `=`), a
name one run lacks holding 0 there, as in HTA.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import pandas as pd

from ..analysis.kineto.trace_diff import trace_ops
from ..opening import open_profile
from ..profile.model import Profile


class DeviceType(Enum):
    """HTA's choice of events: CPU ops, GPU kernels, or both."""

    CPU = 1
    GPU = 2
    ALL = 3


class TraceDiff:
    """HTA's TraceDiff: `compare_traces` and `ops_diff` between a control and a test run, each a
    directory (or file) of rank traces, an opened Profile or a TraceAnalysis."""

    @classmethod
    def compare_traces(cls, control: Any, test: Any, control_rank: int | list[int] | None = None,
                       test_rank: int | list[int] | None = None,
                       control_iteration: int | list[int] | None = None,
                       test_iteration: int | list[int] | None = None,
                       device_type: Any = DeviceType.ALL, use_short_name: bool = False
                       ) -> pd.DataFrame:
        """Per name, the counts and total time (us) in each run and their difference."""
        if use_short_name:
            raise NotImplementedError("use_short_name: names are compared whole here.")
        device = _device(device_type)
        sides = {}
        for label, run, rank, iteration in (("Control", control, control_rank, control_iteration),
                                            ("Test", test, test_rank, test_iteration)):
            ops = trace_ops(_profile(run), rank, iteration, device).set_index("name")
            sides[label] = ops[["occurrences", "time_us"]].rename(columns={
                "occurrences": f"{label}_counts", "time_us": f"{label}_total_duration"})
        comp = pd.concat(sides.values(), axis=1, join="outer").fillna(0)
        comp.index.name = "name"
        comp["diff_counts"] = comp["Test_counts"] - comp["Control_counts"]
        comp["diff_duration"] = comp["Test_total_duration"] - comp["Control_total_duration"]
        comp["counts_change_categories"] = ["+" if c > 0 else "-" if c < 0 else "="
                                            for c in comp["diff_counts"].tolist()]
        return comp.sort_index()

    @classmethod
    def ops_diff(cls, control: Any, test: Any, control_rank: int | list[int] | None = None,
                 test_rank: int | list[int] | None = None,
                 control_iteration: int | list[int] | None = None,
                 test_iteration: int | list[int] | None = None,
                 device_type: Any = DeviceType.ALL) -> dict[str, list[str]]:
        """The names added, deleted, increased, decreased and unchanged in count."""
        df = cls.compare_traces(control, test, control_rank, test_rank, control_iteration,
                                test_iteration, device_type)
        before, after, diff = df["Control_counts"], df["Test_counts"], df["diff_counts"]
        return {"added": df.index[before.eq(0) & after.gt(0)].tolist(),
                "deleted": df.index[before.gt(0) & after.eq(0)].tolist(),
                "increased": df.index[before.gt(0) & diff.gt(0)].tolist(),
                "decreased": df.index[after.gt(0) & diff.lt(0)].tolist(),
                "unchanged": df.index[after.gt(0) & diff.eq(0)].tolist()}


def _device(device_type: Any) -> str:
    """HTA's DeviceType (ours or HTA's own enum, by name) as trace_ops' device."""
    name = getattr(device_type, "name", str(device_type)).upper()
    if name not in DeviceType.__members__:
        raise ValueError(f"device_type must be DeviceType.CPU, GPU or ALL, not {device_type!r}")
    return name.lower()


def _profile(run: Any) -> Profile:
    """A run's profile: a TraceAnalysis' own, or the one open_profile shares for a path."""
    return open_profile(getattr(run, "profile", run))
