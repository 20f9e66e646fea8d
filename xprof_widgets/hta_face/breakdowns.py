"""HTA's breakdown tables in HTA's own columns and rounding, from analysis/kineto/gpu_time.py.

The four breakdowns are computed once, in gpu_time (equal to HTA under the rules of
docs/from_hta.md); here they only take HTA's column names, its rank and stream selection and its
rounding (percentages to 0.01 points, kernel-type shares to 0.1, idle ratios to 0.01), so that a
notebook reading HTA's frames reads ours. The per-name tables (kernels by type, user annotations)
follow HTA's aggregation: names past the `duration_ratio` share of time, or past `num_kernels`,
fold into one `others` row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..analysis.kineto import gpu_time
from ..analysis.kineto.overview import time_breakdown
from ..profile.model import Profile

TEMPORAL_COLUMNS = ["rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)",
                    "kernel_time(us)", "idle_time_pctg", "compute_time_pctg",
                    "non_compute_time_pctg"]
IDLE_COLUMNS = ["rank", "stream", "idle_category", "idle_time", "idle_time_ratio"]
STATS_COLUMNS = ["name", "sum (us)", "max (us)", "min (us)", "stddev", "mean (us)"]
OTHERS = "others"


def temporal(profile: Profile) -> pd.DataFrame:
    """get_temporal_breakdown's frame (TEMPORAL_COLUMNS)."""
    table = time_breakdown(profile)
    return pd.DataFrame({
        "rank": table["rank"],
        **{f"{part}_time(us)": table[f"{part}_us"] for part in
           ("idle", "compute", "non_compute", "kernel")},
        **{f"{part}_time_pctg": table[f"{part}_pct"].round(2) for part in
           ("idle", "compute", "non_compute")},
    }, columns=TEMPORAL_COLUMNS)


def overlap(profile: Profile) -> pd.DataFrame:
    """get_comm_comp_overlap's frame: `rank`, `comp_comm_overlap_pctg`."""
    table = gpu_time.comm_comp_overlap(profile)
    return pd.DataFrame({"rank": table["rank"],
                         "comp_comm_overlap_pctg": table["comp_comm_overlap_pctg"].round(2)})


def kernel_types(profile: Profile, include_memory_kernels: bool) -> pd.DataFrame:
    """get_gpu_kernel_breakdown's first frame: `kernel_type`, `sum` (us), `percentage`, over
    all ranks together (HTA's RANKS_SUMMED), largest first; MEMORY and its overlaps left out
    unless `include_memory_kernels`."""
    table = gpu_time.kernel_breakdown(profile)
    if not include_memory_kernels:
        table = table[~table["kernel_type"].str.contains("MEMORY")]
    sums = table.groupby("kernel_type", sort=False)["total_us"].sum()
    sums = sums.sort_values(ascending=False, kind="stable")
    total = sums.sum()
    return pd.DataFrame({"kernel_type": sums.index.astype(object), "sum": sums.to_numpy(),
                         "percentage": (100 * sums.to_numpy() / total if total else
                                        np.zeros(len(sums))).round(1)})


def kernel_stats(tables: dict[int, pd.DataFrame], include_memory_kernels: bool,
                 duration_ratio: float, num_kernels: int) -> pd.DataFrame:
    """get_gpu_kernel_breakdown's second frame: per rank and kernel type, each kernel's time
    (STATS_COLUMNS + `kernel_type`, `rank`), the tail folded into `others`."""
    wanted = ["COMPUTATION", "COMMUNICATION"] + (["MEMORY"] if include_memory_kernels else [])
    frames = []
    for rank, events in tables.items():
        work = events[events["stream"] != -1]
        types = _kernel_types(work)
        for kind in wanted:
            stats = aggregate(work[types == kind], duration_ratio, num_kernels)
            frames.append(stats.assign(kernel_type=kind, rank=rank))
    out = _concat(frames, [*STATS_COLUMNS, "kernel_type", "rank"])
    return out.sort_values(["kernel_type", "name", "rank"], ignore_index=True, kind="stable")


def _kernel_types(work: pd.DataFrame) -> np.ndarray:
    """Each GPU work event's type (gpu_time.kernel_type), by its name and category."""
    names = work["name"].cat.categories.astype(str)
    cats = work["cat"].cat.categories.astype(str)
    pairs, pair_of_event = np.unique(
        np.stack([work["name"].cat.codes.to_numpy(), work["cat"].cat.codes.to_numpy()]),
        axis=1, return_inverse=True)
    typed = np.array([gpu_time.kernel_type(names[n], cats[c]) for n, c in pairs.T.tolist()],
                     dtype=object)
    return typed[pair_of_event.reshape(-1)]


def user_annotations(tables: dict[int, pd.DataFrame], use_gpu_annotation: bool,
                     duration_ratio: float, num_kernels: int,
                     allowlist_patterns: Sequence[str] | None) -> pd.DataFrame | None:
    """get_gpu_user_annotation_breakdown's frame (STATS_COLUMNS + `rank`): the time of each
    user annotation (`record_function`) on the GPU, or on the CPU; None when there is none."""
    category = "gpu_user_annotation" if use_gpu_annotation else "user_annotation"
    if not any((t["cat"] == category).any() for t in tables.values()):
        return None
    frames = []
    for rank, events in tables.items():
        mine = events[events["cat"] == category]
        keep = _matching(mine["name"], allowlist_patterns)
        frames.append(aggregate(mine, duration_ratio, num_kernels, keep).assign(rank=rank))
    out = _concat(frames, [*STATS_COLUMNS, "rank"])
    return out.sort_values(["rank", "name"], ignore_index=True, kind="stable")


def _matching(names: pd.Series, patterns: Sequence[str] | None) -> set[str]:
    if not patterns:
        return set()
    unique = pd.Series(pd.unique(names.astype(str)), dtype=object)
    hits = np.zeros(len(unique), bool)
    for pattern in patterns:
        hits |= unique.str.contains(pattern, regex=True).to_numpy(bool)
    return set(unique[hits])


def aggregate(events: pd.DataFrame, duration_ratio: float, num_kernels: int,
              keep: set[str] = frozenset()) -> pd.DataFrame:
    """Per name: sum, max, min, sample stddev (0 for one event) and mean of `dur`, largest sum
    first. Past `num_kernels` names, those beyond the `duration_ratio` quantile of the running
    sum, or past the first `num_kernels`, become one `others` row whose statistics are over the
    folded names' sums (as HTA folds them), unless listed in `keep`."""
    grouped = events.groupby("name", observed=True)["dur"]
    stats = grouped.agg(["sum", "max", "min", "mean", "std"]).reset_index()
    stats["name"] = stats["name"].astype(str)
    stats = stats.sort_values("sum", ascending=False, ignore_index=True, kind="stable")
    stats["std"] = stats["std"].fillna(0.0)
    if len(stats) > num_kernels:
        kept = stats["name"].isin(keep).to_numpy()
        running = stats["sum"].cumsum()
        fold = ~kept & ((running > running.quantile(duration_ratio)).to_numpy()
                        | (stats.index >= num_kernels))
        stats.loc[fold, "name"] = OTHERS
        stats = stats.groupby("name")["sum"].agg(["sum", "max", "min", "mean", "std"])
        stats = stats.reset_index()
        stats["std"] = stats["std"].fillna(0.0)
    return pd.DataFrame({"name": stats["name"].astype(object), "sum (us)": stats["sum"],
                         "max (us)": stats["max"], "min (us)": stats["min"],
                         "stddev": stats["std"], "mean (us)": stats["mean"]})


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True)[columns] if frames
            else pd.DataFrame(columns=columns))


def idle(profile: Profile, ranks: Sequence[int], streams: Sequence[int] | None
         ) -> pd.DataFrame:
    """get_idle_time_breakdown's first frame (IDLE_COLUMNS) for these ranks and streams."""
    table = gpu_time.idle_time_breakdown(profile)
    table = table[table["rank"].isin(list(ranks))]
    if streams:
        table = table[table["stream"].isin(list(streams))]
    return pd.DataFrame({"rank": table["rank"], "stream": table["stream"],
                         "idle_category": table["idle_category"],
                         "idle_time": table["idle_time_us"],
                         "idle_time_ratio": table["idle_time_ratio"].round(2)}
                        ).reset_index(drop=True)
