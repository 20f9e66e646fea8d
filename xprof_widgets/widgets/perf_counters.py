"""`PerfCounters`: XProf's perf counters tool, the hardware counters a profile sampled.

    pc = xw.PerfCounters("/logs/run")
    pc.to_dataframe()          # host, chip, kernel, sample, counter, value, description, set
    pc.nonzero_only = False    # XProf lists the non-zero counters by default; so do we
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import traitlets

from ..analysis.perf_counters import analyze_perf_counters
from ..opening import open_profile
from ..profile.model import Profile
from ._base import RequestWidget, handler
from ._table import CsvExport, columnar


class PerfCounters(CsvExport, RequestWidget):
    """Every counter sample of every TPU or GPU chip: one row per counter and sample.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`.
        nonzero_only: list only counters with a non-zero value (XProf's default).
        run, host: which run and host(s) to open (default: the newest run, every host).
    """

    _bundle = "perf_counters.js"
    nonzero_only = traitlets.Bool(True, help="Only counters with a non-zero value.").tag(sync=True)
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, nonzero_only: bool = True,
                 *, run: str | None = None, host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        table = analyze_perf_counters(profile)
        self.profile = profile
        self._all = table
        summary = {"source": profile.source, "rows": len(table),
                   "chips": int(table[["host", "chip"]].drop_duplicates().shape[0]),
                   "samples": int(table[["host", "chip", "kernel", "sample"]]
                                  .drop_duplicates().shape[0]),
                   "counters": int(table["counter"].nunique()),
                   "nonzero": int((table["value"] != 0).sum())}
        super().__init__(nonzero_only=nonzero_only, _summary=summary, **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """The table the view shows: every counter, or the non-zero ones (`nonzero_only`)."""
        table = self._all
        return (table[table["value"] != 0] if self.nonzero_only else table).reset_index(drop=True)

    @handler("table")
    def _table(self, nonzero_only: bool = True) -> dict:
        table = self._all[self._all["value"] != 0] if nonzero_only else self._all
        return {"rows": columnar(table)}

    def __repr__(self) -> str:
        s = self._summary
        return (f"<PerfCounters {self.profile.source!r}: {s['rows']} counter samples on "
                f"{s['chips']} chips>")
