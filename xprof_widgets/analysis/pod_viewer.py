"""Pod viewer (XProf's pod_viewer, deprecated there): each step of every core and host, split by
the step breakdown, its bottleneck, and the stragglers of each step.

Each row is a step on a unit (a device core, or on a CPU-only run the host's threads), split by
the step breakdown every tool shares (step_breakdown.py). XProf's parts are sums of its
categories (step_breakdown.XPROF_PARTS): its "Input" is host to device and waiting for input.

The bottleneck of a row is its largest part as XProf sums them, by XProf's name. A step's time on a host is its slowest unit's. A
straggler is a unit (or host) whose step time is more than STRAGGLER_RATIO times the median of
that step over all units (or hosts): in synchronous training every unit waits for the slowest,
so 10% above the median is the time the others lose. With several hosts the steps are those all
hosts ran, aligned as the Input Pipeline aligns them (step_intersection.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .input_pipeline import DEFAULT_INPUT_PATTERN, analyze_input_pipeline
from .step_breakdown import COLUMNS, NAMES, step_breakdown, xprof_parts

PARTS = COLUMNS
"""The parts of a step, in the order they claim time: the step breakdown's categories."""
XPROF_NAMES = NAMES
"""The name of each part shown to users."""
STRAGGLER_RATIO = 1.10
ROW_COLUMNS = ["step", "name", "host", "core", "start_us", "duration_us", *PARTS, "bottleneck",
               "step_median_us", "straggler"]


@dataclass(frozen=True)
class PodViewerAnalysis:
    """Every step of every unit (`rows`, ROW_COLUMNS and before_step_us), and the tables the
    view draws from them."""

    rows: pd.DataFrame
    source: str

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(self.rows["host"]))

    def by_host(self) -> pd.DataFrame:
        """One row per step and host: its slowest core's time and bottleneck, the step's median
        over hosts, whether the host straggles."""
        if not len(self.rows):
            return pd.DataFrame(columns=["step", "name", "host", "duration_us", "core",
                                         "bottleneck", "step_median_us", "straggler"])
        r = self.rows
        slowest = r.loc[r.groupby(["step", "host"], sort=True)["duration_us"].idxmax()]
        out = slowest[["step", "name", "host", "duration_us", "core", "bottleneck"]].copy()
        return _flag(out.reset_index(drop=True))

    def host_breakdown(self) -> pd.DataFrame:
        """One row per host (a rank of a PyTorch run): its average step on its slowest core,
        split into the parts, that step's bottleneck, and how many of its steps straggle."""
        columns = ["host", "steps", "duration_us", *PARTS, "bottleneck", "straggling_steps"]
        if not len(self.rows):
            return pd.DataFrame(columns=columns)
        r = self.rows
        slowest = r.loc[r.groupby(["step", "host"], sort=True)["duration_us"].idxmax()]
        hosts = self.by_host()
        out = slowest.groupby("host", sort=False)[["duration_us", *PARTS]].mean()
        out.insert(0, "steps", slowest.groupby("host", sort=False).size())
        out["bottleneck"] = _bottleneck(out)
        out["straggling_steps"] = hosts.groupby("host", sort=False)["straggler"].sum()
        out = out.reindex(self.hosts).reset_index().rename(columns={"index": "host"})
        return out[columns].astype({"steps": np.int64, "straggling_steps": np.int64})

    def steps(self) -> pd.DataFrame:
        """One row per step: its slowest core (host and core), the time and bottleneck there,
        the median over cores, how many cores and hosts straggle."""
        if not len(self.rows):
            return pd.DataFrame(columns=["step", "name", "duration_us", "host", "core",
                                         "bottleneck", "step_median_us", "stragglers",
                                         "straggler_hosts"])
        r = self.rows
        slowest = r.loc[r.groupby("step", sort=True)["duration_us"].idxmax()]
        out = slowest[["step", "name", "duration_us", "host", "core", "bottleneck",
                       "step_median_us"]].reset_index(drop=True)
        out["stragglers"] = r.groupby("step", sort=True)["straggler"].sum().to_numpy(np.int64)
        hosts = self.by_host()
        out["straggler_hosts"] = hosts.groupby("step", sort=True)["straggler"].sum().to_numpy(
            np.int64)
        return out


def analyze_pod_viewer(profile: Profile,
                       input_pattern: str = DEFAULT_INPUT_PATTERN) -> PodViewerAnalysis:
    """Every host's rows combined (see the module doc); computed once per profile."""
    return profile.memo(("pod_viewer", input_pattern), lambda: _analyze(profile, input_pattern))


def pod_viewer_available(profile: Profile) -> bool:
    """Whether the profile has steps to break down (the suite's tab): the Input Pipeline's
    steps, which the Overview computes anyway."""
    return bool(len(analyze_input_pipeline(profile).steps))


def _analyze(profile: Profile, input_pattern: str) -> PodViewerAnalysis:
    rows = step_breakdown(profile, input_pattern).rename(columns={"unit": "core"})
    rows["bottleneck"] = _bottleneck(rows)
    return PodViewerAnalysis(_flag(rows)[ROW_COLUMNS + ["before_step_us"]], profile.source)


def _bottleneck(rows: pd.DataFrame) -> np.ndarray:
    """Each row's largest part as XProf sums them (its "Input" is host to device and waiting
    for input together), by XProf's name."""
    if not len(rows):
        return np.empty(0, object)
    parts = xprof_parts(rows)
    return parts.columns.to_numpy(dtype=object)[parts.to_numpy().argmax(axis=1)]


def _flag(rows: pd.DataFrame) -> pd.DataFrame:
    """The step's median time over the rows of each step, and who is far above it."""
    rows["step_median_us"] = rows.groupby("step")["duration_us"].transform("median")
    rows["straggler"] = rows["duration_us"] > STRAGGLER_RATIO * rows["step_median_us"]
    return rows
