"""`MegascaleStats`: XProf's megascale stats, each DCN collective of a multislice TPU run.

    ms = xw.MegascaleStats("/logs/run")
    ms.to_dataframe()   # rendezvous, ..., slack_time_ms, stall_duration_ms, occurrences, ...
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import traitlets

from ..analysis.megascale_stats import analyze_megascale
from ..errors import ProfileError
from ..opening import open_profile
from ..profile.model import Profile
from ._bars import hbar_item
from ._base import RequestWidget, handler
from ._table import CsvExport, columnar


class MegascaleStats(CsvExport, RequestWidget):
    """One row per DCN collective and host: slack, observed duration, stalls, bytes, bandwidth.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` file, fsspec URL, or a `Profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).

    Raises:
        ProfileError: the profile has no DCN collectives (not a multislice TPU run).
    """

    _bundle = "megascale_stats.js"
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, *, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        table = analyze_megascale(profile)
        if not len(table):
            raise ProfileError(
                f"{profile.source}: no DCN collectives to show. Megascale stats need a multislice "
                "TPU run: a /host:CPU plane with `MegaScale:` events, and on /device:TPU:0 send/"
                "recv ops (hlo_category 'host send'/'host recv') inside XLA Modules whose HLO "
                "protos name each one's rendezvous (_xla_host_transfer_rendezvous).")
        self.profile = profile
        self._table = table
        super().__init__(_summary={
            "source": profile.source, "collectives": len(table),
            "hosts": int(table["host"].nunique()),
            "occurrences": int(table["occurrences"].sum()),
            "total_stall_ms": float(table["total_stall_ms"].sum()),
            "bytes": int(table["bytes_transmitted"].sum())}, **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per collective and host (see docs/megascale_stats.md for the columns)."""
        return self._table.copy()

    @handler("table")
    def _rows(self) -> dict:
        table = self._table.sort_values("total_stall_ms", ascending=False, kind="stable")
        labels = table["rendezvous"] if table["host"].nunique() == 1 else \
            table["host"] + " · " + table["rendezvous"]
        item = hbar_item(labels, table["total_stall_ms"], x_label="ms", tip="@value{0.000} ms",
                         title="Aggregated total stall per collective (stall x occurrences)")
        return {"rows": columnar(self._table),
                "charts": [{"key": "stall", "title": "Stall per collective", "item": item}]}

    def __repr__(self) -> str:
        s = self._summary
        return (f"<MegascaleStats {self.profile.source!r}: {s['collectives']} DCN collectives, "
                f"{s['occurrences']} occurrences>")
