"""`FrameworkOpStats`: XProf's framework op stats (TensorFlow stats) in a notebook cell.

Pies of self time on the device and the host, by op and by op type, and the table of every
framework op (sortable, filterable, Export as CSV); idle time shown or left out. On a PyTorch
(Kineto) trace the table can also be the Operator view of PyTorch's TensorBoard plugin: one row
per op (or op and input shape, or op and call stack), host and device times side by side.

    stats = xw.FrameworkOpStats("/logs/run")
    stats.to_dataframe()                   # XProf's columns, in real units
    stats.include_idle = False             # shares of busy time; the view follows
    stats.to_dataframe(group_by="input_shape")  # PyTorch: the Operator view by op and shape
    stats.group_by = "op"                  # the view shows the Operator view
    stats.to_csv("framework_op_stats.csv")
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import traitlets

from ..analysis.framework_op_stats import (
    FrameworkOpStatsAnalysis,
    analyze_framework_op_stats,
)
from ..analysis.kineto.operators import GROUPINGS as OPERATOR_GROUPINGS
from ..analysis.kineto.operators import has_operators, operators
from ..opening import open_profile
from ..profile.model import Profile
from ._base import RequestWidget, handler, jsonable
from ._pies import pie_item
from ._table import CsvExport, columnar

PIES = [("Device", "operation", "Device self time by op"),
        ("Device", "type", "Device self time by op type"),
        ("Host", "operation", "Host self time by op"),
        ("Host", "type", "Host self time by op type")]
XPROF = "host_or_device"
"""XProf's table: one row per framework op and side (the other groupings are PyTorch's)."""
GROUPINGS = (XPROF, *OPERATOR_GROUPINGS)
OPERATOR_PIES = [("device_self_time_us", "Device self time"),
                 ("device_total_time_us", "Device total time"),
                 ("host_self_time_us", "Host self time"),
                 ("host_total_time_us", "Host total time")]


class FrameworkOpStats(CsvExport, RequestWidget):
    """Time by framework op (TensorFlow `name:Type`, JAX `scope/op`) on the device and host.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`
            from `xprof_widgets.open_profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).
        xla_cpu_ops: on a CPU run, list the XLA ops that ran as device rows (XProf lists none).
    """

    _bundle = "framework_op_stats.js"

    include_idle = traitlets.Bool(True, help="Show idle time as an IDLE row per side; without "
                                  "it, shares are of busy time.").tag(sync=True)
    group_by = traitlets.Enum(GROUPINGS, XPROF, help="'host_or_device': XProf's table; on a "
                              "PyTorch trace also the Operator view by 'op', 'input_shape' or "
                              "'call_stack'.").tag(sync=True)
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, *, xla_cpu_ops: bool = True,
                 **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        analysis = analyze_framework_op_stats(profile, xla_cpu_ops=xla_cpu_ops)
        summary = _summary_of(analysis)
        summary["groupings"] = list(GROUPINGS if has_operators(profile) else (XPROF,))
        super().__init__(_summary=summary, **kwargs)
        self.profile = profile
        self.analysis = analysis

    def to_dataframe(self, include_idle: bool | None = None,
                     group_by: str | None = None) -> pd.DataFrame:
        """XProf's table (device rows, then host rows, by self time), or on a PyTorch trace the
        Operator view grouped by "op", "input_shape" or "call_stack" (see docs); the widget's
        own settings where not given."""
        group_by = self.group_by if group_by is None else group_by
        if group_by == XPROF:
            return self.analysis.table(self.include_idle if include_idle is None
                                       else include_idle)
        if group_by not in self._summary["groupings"]:
            raise ValueError(f"group_by={group_by!r}: {self.profile.source} offers "
                             f"{', '.join(map(repr, self._summary['groupings']))} (the Operator "
                             "view's groupings need a PyTorch profiler trace)")
        return operators(self.profile, group_by)

    @handler("table")
    def _table(self, include_idle: bool, group_by: str = XPROF) -> dict:
        if group_by != XPROF:
            return self._operator_table(group_by)
        table = self.analysis.table(bool(include_idle))
        charts = []
        for where, by, title in PIES:
            if not (table["host_or_device"] == where).any():
                continue
            item = pie_item(self.analysis.self_time_by(where, by, bool(include_idle)), title)
            if item is not None:
                charts.append({"key": f"{where.lower()}_{by}", "title": title, "item": item})
        return {"rows": columnar(table), "charts": charts}

    def _operator_table(self, group_by: str) -> dict:
        """The Operator view: its table and, as the plugin draws them, pies of device and host
        self and total time by row."""
        table = self.to_dataframe(group_by=group_by)
        label = table["operation"].astype(str)
        for key in ("input_shape", "call_stack"):
            if key in table:
                label = label + " " + table[key].astype(str).str.slice(0, 60)
        charts = []
        for column, title in OPERATOR_PIES:
            item = pie_item(pd.Series(table[column].to_numpy(), index=label.to_numpy()), title)
            if item is not None:
                charts.append({"key": column, "title": title, "item": item})
        return {"rows": columnar(table), "charts": charts, "group_by": group_by}

    def __repr__(self) -> str:
        s = self._summary
        return (f"<FrameworkOpStats {self.profile.source!r} device_ops={s['device_ops']} "
                f"host_ops={s['host_ops']}>")


def _summary_of(analysis: FrameworkOpStatsAnalysis) -> dict:
    def ops(frame: pd.DataFrame) -> int:
        return int((frame["type"] != "IDLE").sum())

    notes = []
    if analysis.device_kind == "CPU":
        notes.append("A CPU run: its XLA ops are the device rows (the device JAX reports as "
                     "`cpu`); XProf lists none.")
    return jsonable({
        "device_kind": analysis.device_kind, "device_ops": ops(analysis.device),
        "host_ops": ops(analysis.host),
        "device_time_us": analysis.device_total_ps / 1e6,
        "device_idle_us": analysis.idle_ps("Device") / 1e6,
        "host_time_us": analysis.host_total_ps / 1e6,
        "host_idle_us": analysis.idle_ps("Host") / 1e6,
        "notes": notes, "source": analysis.source,
    })
