"""`FrameworkOpStats`: XProf's framework op stats (TensorFlow stats) in a notebook cell.

Pies of self time on the device and the host, by op and by op type, and the table of every
framework op (sortable, filterable, Export as CSV); idle time shown or left out.

    stats = xw.FrameworkOpStats("/logs/run")
    stats.to_dataframe()                   # XProf's columns, in real units
    stats.include_idle = False             # shares of busy time; the view follows
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
from ..profile.model import Profile
from ..profile.open import open_profile
from ._base import RequestWidget, handler, jsonable
from ._pies import pie_item
from ._table import CsvExport, columnar

PIES = [("Device", "operation", "Device self time by op"),
        ("Device", "type", "Device self time by op type"),
        ("Host", "operation", "Host self time by op"),
        ("Host", "type", "Host self time by op type")]


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
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, *, xla_cpu_ops: bool = True,
                 **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        analysis = analyze_framework_op_stats(profile, xla_cpu_ops=xla_cpu_ops)
        super().__init__(_summary=_summary_of(analysis), **kwargs)
        self.profile = profile
        self.analysis = analysis

    def to_dataframe(self, include_idle: bool | None = None) -> pd.DataFrame:
        """XProf's table: device rows, then host rows, by self time (see docs)."""
        return self.analysis.table(self.include_idle if include_idle is None else include_idle)

    @handler("table")
    def _table(self, include_idle: bool) -> dict:
        table = self.analysis.table(bool(include_idle))
        charts = []
        for where, by, title in PIES:
            if not (table["host_or_device"] == where).any():
                continue
            item = pie_item(self.analysis.self_time_by(where, by, bool(include_idle)), title)
            if item is not None:
                charts.append({"key": f"{where.lower()}_{by}", "title": title, "item": item})
        return {"rows": columnar(table), "charts": charts}

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
