"""`DistributedView`: a multi-rank PyTorch run whole: each rank's GPU time, its collectives'
bandwidth, and who kept the others waiting (analysis/distributed.py).

The summary tiles come with the widget (`_summary`, small); the view then asks for one `table`
answer: each rank's kernel time as a stacked bar (compute, overlap, exposed communication,
other, idle), the waiting each rank caused by arriving last, and three tables (collectives by
kind; each collective matched across ranks; stragglers per rank).

    dv = xw.DistributedView("/logs/ranks")         # a directory of rank traces, or a pod
    dv.to_dataframe()     # a row per rank: the kernel-time parts, overlap share, waiting
    dv.by_kind()          # per collective kind and group: size, time, algbw, busbw
    dv.skew()             # per collective matched across ranks: spread, last rank, wait
    dv.stragglers()       # per rank: last arrivals, waiting caused
    dv.instances()        # every collective kernel of every rank
    xw.TraceViewer(dv.profile).show(dv.collective(0))   # one collective on every rank, selected
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.distributed import (
    KIND_COLUMNS,
    RANK_PARTS,
    SKEW_COLUMNS,
    STRAGGLER_COLUMNS,
    DistributedAnalysis,
    analyze_distributed,
)
from ..opening import open_profile
from ..profile.model import Profile
from . import _charts
from ._base import RequestWidget, handler, jsonable
from ._table import CsvExport, columnar

PART_LABELS = {"compute_us": "Compute", "overlap_us": "Compute overlapping communication",
               "exposed_communication_us": "Exposed communication", "other_us": "Other work",
               "idle_us": "Idle"}
PART_COLORS = {"compute_us": "#4e79a7", "overlap_us": "#59a14f",
               "exposed_communication_us": "#e15759", "other_us": "#f28e2b",
               "idle_us": "#bab0ac"}
MAX_SKEW_ROWS = 5000
"""Matched collectives the view's table carries; `skew()` has them all."""


class DistributedView(RequestWidget, CsvExport):
    """A distributed PyTorch run: per-rank GPU time, collectives, skew and stragglers.

    Args:
        path_or_profile: a directory of Kineto traces (one per rank), a file, an fsspec URL, or
            a `Profile` (a pod opened on Dask too); every rank is opened.
        run, host: which run and host(s) to open (default: the newest run, every host).
    """

    _bundle = "distributed.js"
    _summary = traitlets.Dict().tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, *, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        self.profile = profile
        self.analysis: DistributedAnalysis = analyze_distributed(profile)
        run_label = f" (run {profile.run})" if profile.run else ""
        super().__init__(_summary={**summary(self.analysis),
                                   "source": f"{profile.source}{run_label}"}, **kwargs)

    def to_dataframe(self) -> pd.DataFrame:
        """A row per rank: rank, host, kernel_us (its first GPU work to its last), the parts
        (compute_us alone, overlap_us, exposed_communication_us, other_us, idle_us; they add up
        to kernel_us), communication_us, comp_comm_overlap_pctg (HTA's), waiting_us (its
        collectives' time waiting for a late rank)."""
        return self.analysis.ranks.copy()

    def by_kind(self) -> pd.DataFrame:
        """Per collective kind, family and process group: count, sizes, time, wait, algbw and
        busbw (GB/s, nccl-tests' definitions)."""
        return self.analysis.by_kind()

    def skew(self) -> pd.DataFrame:
        """Per collective matched across ranks: arrival spread, last rank, wait caused."""
        return self.analysis.skew()

    def stragglers(self) -> pd.DataFrame:
        """Per rank: how often it arrived last, and the waiting it caused the others."""
        return self.analysis.stragglers()

    def instances(self) -> pd.DataFrame:
        """Every collective kernel of every rank, with its matched instance and event id."""
        return self.analysis.instances.copy()

    def collective(self, instance: int) -> pd.DataFrame:
        """The kernels of one matched collective (`skew()`'s `instance`), one row per rank,
        with their `event` ids: `TraceViewer.show` selects them on every rank's row at once."""
        rows = self.analysis.instances
        return rows[rows["instance"] == instance].reset_index(drop=True)

    def collective_edges(self, kind: str | None = None) -> pd.DataFrame:
        """Each matched collective's kernels linked across ranks, every rank's to the last
        arrival's: src, dst (event ids), label, instance, from_host, to_host, wait_us."""
        return self.analysis.collective_edges(kind)

    def link_collectives(self, tv: Any, kind: str | None = None,
                         name: str = "collectives") -> None:
        """Lays `collective_edges(kind)` over a Trace Viewer of this profile as the flow
        overlay `name`: one collective's instances on every rank linked to its last arrival."""
        tv.overlay_flows(name, self.collective_edges(kind))

    @handler("table")
    def _table(self) -> dict:
        return report(self.analysis)

    def __repr__(self) -> str:
        a = self.analysis
        return (f"<DistributedView {self.profile.source!r}: {len(a.ranks)} ranks, "
                f"{len(a.instances)} collective kernels>")


NO_DATA = ("No GPU work or collectives in this profile: the distributed view reads PyTorch "
           "(Kineto) traces of GPU runs, one per rank.")


def summary(analysis: DistributedAnalysis) -> dict:
    """The figures of the view's tiles (or its message where there is nothing to show)."""
    ranks, instances = analysis.ranks, analysis.instances
    if not len(ranks) and not len(instances):
        return {"message": NO_DATA}
    skew, stragglers = analysis.skew(), analysis.stragglers()
    spread = skew[skew["spread_us"] > 0]
    worst = stragglers.sort_values("wait_caused_us", ascending=False, kind="stable")
    kernel = float(ranks["kernel_us"].sum())
    return jsonable({
        "ranks": len(ranks), "collectives": len(instances), "matched": len(skew),
        "mismatched": analysis.mismatched,
        "communication_us": float(ranks["communication_us"].sum()),
        "exposed_pct": 100 * float(ranks["exposed_communication_us"].sum()) / kernel
        if kernel else 0.0,
        "waiting_us": float(ranks["waiting_us"].sum()),
        "max_spread_us": float(skew["spread_us"].max()) if len(skew) else 0.0,
        "straggler": str(worst["host"].iat[0]) if len(spread) and len(worst) else "",
        "straggler_pct": float(worst["wait_caused_pct"].iat[0]) if len(spread) else 0.0,
    })


def report(analysis: DistributedAnalysis) -> dict:
    """What the view's `table` request answers: the two charts and the three tables."""
    ranks, instances = analysis.ranks, analysis.instances
    if not len(ranks) and not len(instances):
        return {"message": NO_DATA}
    skew, stragglers = analysis.skew(), analysis.stragglers()
    charts = {}
    if len(ranks):
        charts["ranks"] = _charts.json_item(rank_figure(ranks))
    if (skew["spread_us"] > 0).any():
        charts["stragglers"] = _charts.json_item(straggler_figure(stragglers))
    return jsonable({
        "charts": charts,
        "kinds": columnar(analysis.by_kind(), KIND_COLUMNS),
        "skew": columnar(skew.head(MAX_SKEW_ROWS), SKEW_COLUMNS),
        "stragglers": columnar(stragglers, STRAGGLER_COLUMNS),
    })


def rank_figure(ranks: pd.DataFrame) -> _charts.Figure:
    """Stacked bars, one per rank: its kernel time split into the parts (ms)."""
    labels = ranks["host"].astype(str).tolist()
    data: dict[str, Any] = {"y": labels, "total": ranks["kernel_us"].to_numpy(np.float64) / 1000,
                            "share": ranks["comp_comm_overlap_pctg"].to_numpy(np.float64),
                            "waiting": ranks["waiting_us"].to_numpy(np.float64) / 1000}
    for part in RANK_PARTS:
        data[part] = ranks[part].to_numpy(np.float64) / 1000
    source = _charts.source(data)
    fig = _charts.Figure(title="Each rank's GPU time, first work to last",
                         height=min(640, 110 + 26 * len(labels)), x_label="ms",
                         tools="xpan,xwheel_zoom,reset,save", y_factors=list(reversed(labels)),
                         x_range=_charts.model("DataRange1d", start=0), active_scroll=None)
    bars = [fig.glyph("HBar", source, y=_charts.field("y"), height=0.7,
                      left=_charts.stack(*RANK_PARTS[:k]), right=_charts.stack(*RANK_PARTS[:k + 1]),
                      fill_color=PART_COLORS[p], line_color=None, legend_label=PART_LABELS[p])
            for k, p in enumerate(RANK_PARTS)]
    fig.add_tool(_charts.hover(bars, [
        ("rank", "@y"), ("kernel time", "@total{0.000} ms"),
        *[(PART_LABELS[p].lower(), f"@{p}{{0.000}} ms") for p in RANK_PARTS],
        ("communication overlapped", "@share{0.0}%"), ("waiting for late ranks", "@waiting{0.000} ms")]))
    fig.y_grid["attributes"]["grid_line_color"] = None
    fig.legend_of().update(orientation="horizontal", label_text_font_size="10px",
                           click_policy="hide", border_line_color=None)
    fig.place_legend_above()
    return fig


def straggler_figure(stragglers: pd.DataFrame) -> _charts.Figure:
    """Bars, one per rank: the waiting it caused the others by arriving last (ms)."""
    labels = stragglers["host"].astype(str).tolist()
    source = _charts.source({
        "y": labels, "caused": stragglers["wait_caused_us"].to_numpy(np.float64) / 1000,
        "pct": stragglers["wait_caused_pct"].to_numpy(np.float64),
        "last": stragglers["last_arrivals"].to_numpy(np.int64),
        "late": np.nan_to_num(stragglers["mean_late_us"].to_numpy(np.float64)) / 1000})
    fig = _charts.Figure(title="Waiting each rank caused the others by arriving last",
                         height=min(640, 90 + 26 * len(labels)), x_label="ms",
                         tools="xpan,xwheel_zoom,reset,save", y_factors=list(reversed(labels)),
                         x_range=_charts.model("DataRange1d", start=0), active_scroll=None)
    bars = fig.glyph("HBar", source, y=_charts.field("y"), height=0.7, left=0,
                     right=_charts.field("caused"), fill_color="#e15759", line_color=None)
    fig.add_tool(_charts.hover([bars], [
        ("rank", "@y"), ("wait caused", "@caused{0.000} ms (@pct{0.0}%)"),
        ("arrived last", "@last times"), ("mean lateness", "@late{0.000} ms")]))
    fig.y_grid["attributes"]["grid_line_color"] = None
    return fig
