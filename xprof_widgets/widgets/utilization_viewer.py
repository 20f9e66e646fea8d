"""`UtilizationViewer`: XProf's utilization viewer, achieved against peak for each unit of a TPU
chip (scalar, vector, MXU, XLU, HBM, ICI, SparseCore), from its performance counters.

    uv = xw.UtilizationViewer("/logs/run")
    uv.to_dataframe()   # host, device, sample, node, name, achieved, peak, unit, utilization
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import traitlets

from ..analysis.utilization_viewer import SUPPORTED, analyze_utilization
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from ._bars import hbar_item
from ._base import RequestWidget, handler
from ._table import CsvExport, columnar


class UtilizationViewer(CsvExport, RequestWidget):
    """Every unit's achieved and peak count in each counter sample of each TPU chip.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).

    Raises:
        ProfileError: the profile has no counter samples of a supported TPU chip.
    """

    _bundle = "utilization_viewer.js"
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, *, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        table = analyze_utilization(profile)
        if not len(table):
            raise ProfileError(
                f"{profile.source}: no TPU performance-counter samples to read. The utilization "
                f"viewer needs /device:TPU:N planes stating device_id and a device_type_string "
                f"of {' or '.join(SUPPORTED)}, whose lines carry events with counter_value and "
                "performance_counter_id (a TPU profile captured with performance counters on).")
        self.profile = profile
        self._table = table
        samples = table[["host", "device", "sample"]].drop_duplicates()
        super().__init__(_summary={
            "source": profile.source, "rows": len(table),
            "chips": int(samples[["host", "device"]].drop_duplicates().shape[0]),
            "samples": len(samples), "metrics": int(table["name"].nunique())}, **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per unit and sample (see docs/utilization_viewer.md for the columns)."""
        return self._table.copy()

    def by_unit(self) -> pd.DataFrame:
        """Mean utilization of each unit over every sample (the chart), in XProf's order."""
        table = self._table
        out = table.groupby("name", sort=False).agg(
            unit=("unit", "first"), samples=("utilization", "size"),
            mean_utilization=("utilization", "mean"), max_utilization=("utilization", "max"))
        return out.reset_index()

    @handler("table")
    def _rows(self) -> dict:
        units = self.by_unit()
        item = hbar_item(units["name"], 100 * units["mean_utilization"].fillna(0),
                         title="Mean utilization per unit, over every sample", x_label="%",
                         tip="@value{0.0}%")
        return {"rows": columnar(self._table),
                "charts": [{"key": "units", "title": "Utilization per unit", "item": item}]}

    def __repr__(self) -> str:
        s = self._summary
        return (f"<UtilizationViewer {self.profile.source!r}: {s['metrics']} units, "
                f"{s['samples']} samples on {s['chips']} chips>")
