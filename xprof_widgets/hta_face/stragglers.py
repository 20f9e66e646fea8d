"""Profiler steps and the ranks that start their communication late, as HTA finds them.

HTA's straggler metric (hta/analyzers/straggler.py): among the NCCL kernels (`ncclKernel...`)
that run at least 1% of a mean step, take each rank's last one per stream, step and name; the
(stream, name) whose duration varies most across ranks (mean over steps of the standard
deviation) is the probe, and its start, as a share of a mean step from the first event, is the
metric. In each step the `num_candidates` ranks that start it latest are counted; the ranks
counted most often are the potential stragglers. Where no such kernel runs on two ranks
(a single rank, no NCCL), HTA raises; here the answer is no straggler, with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd

MIN_SHARE = 0.01
"""HTA's min_normalized_duration: a communication kernel shorter than this share of a mean
step cannot hold the others up."""


def profiler_steps(tables: dict[int, pd.DataFrame]) -> list[int]:
    """The profiler steps (N of `ProfilerStep#N`) any rank's events belong to, in order."""
    found = set()
    for events in tables.values():
        found |= set(events["iteration"].unique().tolist())
    return sorted(int(i) for i in found - {-1})


def straggler_counts(events: pd.DataFrame, num_candidates: int) -> pd.Series:
    """Per rank, in how many steps it was among the `num_candidates` latest to start the probe
    kernel (`events`: every rank's events of the chosen steps, with a `rank` column)."""
    steps = events["iteration"].unique()
    t_min = events["ts"].min()
    mean_step = (events["end"].max() - t_min) / len(steps)
    long = events[(events["stream"] > 0) & (events["iteration"] > 0)
                  & (events["dur"] >= mean_step * MIN_SHARE)
                  & events["name"].astype(str).str.startswith("ncclKernel")]
    long = long.assign(name=long["name"].astype(str)).sort_values("ts", kind="stable")
    last = long.groupby(["rank", "stream", "iteration", "name"], as_index=False).last()
    last["metric"] = (last["ts"] - t_min) / mean_step
    last["duration"] = last["dur"] / mean_step
    spread = last.groupby(["stream", "iteration", "name"])["duration"].std()
    spread = spread.groupby(["stream", "name"]).mean().dropna()
    if not len(spread):  # no NCCL kernel long enough on two ranks: no probe
        return pd.Series(dtype="int64")
    stream, name = spread.idxmax()
    probe = last[(last["stream"] == stream) & (last["name"] == name)]
    counts = pd.Series(0, index=sorted(probe["rank"].unique()), dtype="int64")
    for _, group in probe.groupby("iteration"):
        threshold = group["metric"].sort_values(ascending=False).iloc[
            min(num_candidates, len(group)) - 1]
        counts = counts.add((group["metric"] >= threshold).groupby(group["rank"]).sum(),
                            fill_value=0)
    return counts.astype("int64")


def potential_stragglers(tables: dict[int, pd.DataFrame], wanted: Sequence[int] | None,
                         num_candidates: int) -> list[int]:
    """get_potential_stragglers' answer: the ranks counted most often (straggler_counts)."""
    available = profiler_steps(tables)
    chosen = available if wanted is None else [s for s in wanted if s in available]
    if not chosen:
        raise ValueError(f"profiler_steps={wanted}: none of them is in the trace; "
                         f"its steps: {available}.")
    events = pd.concat([t.assign(rank=r) for r, t in tables.items()], ignore_index=True)
    events = events[events["iteration"].isin(chosen)]
    counts = straggler_counts(events, max(num_candidates, 1))
    if not len(counts):
        warnings.warn(f"{sorted(tables)}: no NCCL kernel of a step runs on two ranks for 1% of "
                      "a step or more, so no rank can be told to start late; no stragglers.",
                      stacklevel=3)
    return counts.sort_values(ascending=False, kind="stable")[:num_candidates].index.tolist()
