"""`Overview`: the suite's first tab; what ran, how long a step takes and why, what to look at."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from .. import tools as registry
from ..analysis.kineto.gpu_time import comm_comp_overlap, idle_time_breakdown
from ..analysis.kineto.overview import time_breakdown
from ..analysis.kineto.step_breakdown import torch_step_breakdown
from ..analysis.overview import Overview as OverviewData
from ..analysis.overview import overview
from ..analysis.suggestions import RULES
from ..opening import open_profile
from ..profile.model import Profile
from ._base import RequestWidget, handler, jsonable
from .input_pipeline import PARTS


class Overview(RequestWidget):
    """Run environment, step time and its breakdown, a PyTorch trace's step time as its
    TensorBoard plugin splits it and GPU time breakdowns (as HTA's), top HLO and framework ops, device compute precision and recommendations (each
    linking, in the suite, to the tool it comes from)."""

    _bundle = "overview.js"

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.profile = open_profile(path_or_profile, run=run, host=host)
        self._data: OverviewData | None = None

    @property
    def data(self) -> OverviewData:
        """The overview as plain data (computed on first use)."""
        if self._data is None:
            self._data = overview(self.profile)
        return self._data

    def time_breakdown(self) -> pd.DataFrame:
        """Each rank's GPU time split into idle, compute and non-compute, as HTA's
        get_temporal_breakdown reports it: rank, idle_us, compute_us, non_compute_us,
        kernel_us and the three shares in percent (analysis/kineto/gpu_time.py). Empty for a profile
        without Kineto GPU work."""
        return time_breakdown(self.profile)

    def comm_comp_overlap(self) -> pd.DataFrame:
        """Per rank, how much communication time overlaps computation, as HTA's
        get_comm_comp_overlap reports it: rank, communication_us, overlap_us and
        comp_comm_overlap_pctg (NaN on a rank without communication). Empty for a profile
        without Kineto GPU work."""
        return comm_comp_overlap(self.profile)

    def idle_time_breakdown(self) -> pd.DataFrame:
        """Per rank and stream, GPU idle time as host wait, kernel wait and other, as HTA's
        get_idle_time_breakdown reports it (for every rank): rank, stream, idle_category,
        idle_time_us, idle_time_ratio. Empty for a profile without Kineto GPU work."""
        return idle_time_breakdown(self.profile)

    def torch_step_breakdown(self) -> pd.DataFrame:
        """Each step's time split as PyTorch's TensorBoard plugin splits it (Kernel, Memcpy,
        Memset, Communication, Runtime, DataLoader, CPU Exec, Other; microseconds), then one
        `average` row per host (analysis/kineto/step_breakdown.py). Empty for a profile
        without Kineto steps."""
        return torch_step_breakdown(self.profile).to_dataframe()

    def torch_gpu_metrics(self) -> pd.DataFrame:
        """Per GPU, the plugin's GPU utilization, estimated SM efficiency (fractions) and
        estimated achieved occupancy (percent); empty for a CPU-only trace."""
        return torch_step_breakdown(self.profile).gpu

    @handler("overview")
    def _overview(self) -> dict:
        content = jsonable(self.data.to_dict())
        looks = {column: (label, color) for column, label, color in PARTS}
        # the step breakdown's names and colours; the view draws the parts that hold time
        content["step_breakdown"] = [p for p in content["step_breakdown"] if p["avg_ms"] > 0]
        for part in content["step_breakdown"]:
            part["label"], part["color"] = looks[part["part"]]
        # in the suite, the tools it offers: a recommendation links to the one it comes from
        content["tools"] = ({t.key: t.title for t in registry.offered(self.profile)}
                            if self._linked else {})
        # which rules are XProf's smart suggestions (the rest are ours): the view says whose
        content["xprof_rules"] = [rule.name for rule in RULES]
        return content
